"""The embedded server: a restart keeps its port, and the fsync setting reaches nats-server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import psutil
import pytest

from bus import EmbeddedServer, free_port, port_is_free


def leave_time_wait(port: int) -> None:
    """Accept one connection on ``port`` and close it from the listening side first, as a
    server that stops does: the port is left with a socket in TIME_WAIT."""
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen()
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = listener.accept()
        accepted.close()  # the side that closes first goes to TIME_WAIT
        client.recv(1)  # the FIN arrived
        client.close()


def plain_bind_fails(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def test_a_port_left_in_time_wait_is_free() -> None:
    """A port whose only sockets linger in TIME_WAIT is free for nats-server (which binds
    with SO_REUSEADDR), although a bind without that option is still refused there."""
    port = free_port()
    leave_time_wait(port)
    assert plain_bind_fails(port)  # the situation the old probe misread as "taken"
    assert port_is_free(port)


def test_a_port_something_listens_on_is_taken() -> None:
    """A listening socket still makes the port taken."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        assert not port_is_free(listener.getsockname()[1])


@pytest.mark.parametrize("always", [True, False], ids=["sync-always", "sync-interval"])
async def test_sync_always_reaches_nats_server(tmp_path: Path, always: bool) -> None:
    """nats-server's own /varz reports sync_always exactly when the embedded server asks."""
    server = EmbeddedServer(
        tmp_path, port=free_port(), auth=None, sync_always=always, http_port=free_port()
    )
    await server.start()
    try:
        url = f"http://127.0.0.1:{server.http_port}/varz"
        varz = await asyncio.to_thread(lambda: json.load(urllib.request.urlopen(url, timeout=5)))
        assert bool(varz["jetstream"]["config"].get("sync_always")) is always
    finally:
        server.stop()


def start_up(data_dir: Path, port: int, *extra: str) -> tuple[subprocess.Popen[str], list[str]]:
    """`loopbus up` in the background; returns it and its first lines up to the NATS line."""
    command = ["up", "--data-dir", str(data_dir), "--port", str(port), *extra]
    up = subprocess.Popen(
        [sys.executable, "-m", "loopbus.cli", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "LOOPBUS_NATS_URL"},
    )
    assert up.stdout is not None
    lines: list[str] = []
    for line in up.stdout:
        lines.append(line.rstrip())
        if "loopbus: NATS with JetStream at" in line or "error" in line:
            break
    return up, lines


@pytest.mark.slow
def test_up_killed_with_sigkill_restarts_on_the_same_port(tmp_path: Path) -> None:
    """`loopbus up --sync always` SIGKILLed and started again serves on the same port: the
    server's lingering connections do not make it move, and it waits for the old server."""
    port = free_port()
    first, lines = start_up(tmp_path, port, "--sync", "always")
    try:
        assert f"at nats://127.0.0.1:{port} " in lines[-1], lines
        assert "synced to disk before every ack" in lines[-1]
        server = next(c for c in psutil.Process(first.pid).children() if "nats-server" in c.name())
        # A client still connected when the server stops: the server closes it first, so
        # the port keeps a socket in TIME_WAIT, as after any crash with clients attached.
        client = socket.create_connection(("127.0.0.1", port))
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        while client.recv(4096):
            pass  # until the dying server closes the connection
        client.close()
    finally:
        first.kill()
    second, lines = start_up(tmp_path, port)
    try:
        assert not any("is taken" in line for line in lines), lines
        assert f"at nats://127.0.0.1:{port} " in lines[-1], lines
        assert "synced to disk every 2 minutes" in lines[-1]
        assert not server.is_running() or server.status() == psutil.STATUS_ZOMBIE
    finally:
        second.send_signal(signal.SIGTERM)
        try:
            second.wait(timeout=60)
        except subprocess.TimeoutExpired:
            second.kill()


def test_sync_with_an_external_server_is_a_usage_error(tmp_path: Path) -> None:
    """`up --sync always` against a server of one's own is refused in one line pointing at
    that server's configuration, not silently ignored."""
    command = ["up", "--sync", "always", "--nats-url", "nats://127.0.0.1:1"]
    done = subprocess.run(
        [sys.executable, "-m", "loopbus.cli", *command, "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "set sync_interval in that server's configuration" in done.stderr
    assert "Traceback" not in done.stderr
