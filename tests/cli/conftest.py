"""Run the real ``loopbus`` command line as subprocesses."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bus import Bus, EmbeddedServer, connect, ensure_log, free_port

LOOPBUS = [sys.executable, "-m", "loopbus.cli"]


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.out.splitlines() if line.strip()]


def loopbus(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> Result:
    """Run one ``loopbus`` command to completion."""
    done = subprocess.run(
        [*LOOPBUS, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=(os.environ | (env or {})),
        stdin=subprocess.DEVNULL,
    )
    return Result(done.returncode, done.stdout, done.stderr)


@dataclass
class Up:
    process: subprocess.Popen[str]
    url: str
    lines: list[str]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        self.process.send_signal(sig)
        rest, _ = self.process.communicate(timeout=timeout)
        self.lines.extend(rest.splitlines())
        return self.process.returncode


def start_up(*args: str, env: dict[str, str] | None = None, timeout: float = 30) -> Up:
    """Start ``loopbus up`` and wait for the line that names the URL to connect to."""
    process = subprocess.Popen(
        [*LOOPBUS, "up", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        env=os.environ | (env or {}),
    )
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    url = None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        match = re.search(r"nats://[\w.\-]+:\d+", line)
        if match and url is None:
            url = match.group(0)
        if "press Ctrl-C to stop" in line:
            break
    if url is None or process.poll() is not None:
        process.kill()
        raise AssertionError("loopbus up did not start:\n" + "\n".join(lines))
    return Up(process, url, lines)


@pytest.fixture
def up_factory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Starts ``loopbus up`` on a data directory of the test's; the commands the test runs
    after it find that up's credentials there (``LOOPBUS_DATA_DIR``), as a user's do in
    the default ``.loopbus``."""
    started: list[Up] = []

    def factory(*args: str, env: dict[str, str] | None = None) -> Up:
        data_dir = tmp_path / f"data{len(started)}"
        up = start_up("--data-dir", str(data_dir), *args, env=env)
        monkeypatch.setenv("LOOPBUS_DATA_DIR", str(data_dir))
        started.append(up)
        return up

    yield factory
    for up in started:
        if up.process.poll() is None:
            up.process.kill()
            up.process.wait()


@pytest_asyncio.fixture(loop_scope="session")
async def own_bus(tmp_path: Path) -> AsyncIterator[Bus]:
    """A server of the test's own, for a test that runs the projector: the projector follows
    every project on its server, and here that is only the test's."""
    server = EmbeddedServer(tmp_path / "nats", port=free_port(), auth=None)
    await server.start()
    bus = await connect(server.url, name="cli-test")
    try:
        await ensure_log(bus.js)
        yield bus
    finally:
        await bus.close()
        server.stop()
