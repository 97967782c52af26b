"""`python -m workers.reviewer` and `python -m workers.investigator` as real
processes."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest
from reviewkit import Scripted, count, ready, setup_repo, wait_log

from bus import WORKER_BUCKET, Bus
from schemas.reviews import RoundClosed
from workers.runtime import health_key

ROOT = Path(__file__).resolve().parents[2]


async def beaconed(bus: Bus, name: str, timeout: float = 30) -> None:
    """Wait (watching the workers bucket) until the daemon's first health beacon is stored.

    Stopping a daemon while nats-py is inside that first KV put can swallow the
    cancellation (the runtime's beacon loop then never ends); the tests stop it after."""
    beacons = await bus.bucket(WORKER_BUCKET)
    async with asyncio.timeout(timeout):
        async for entry in beacons.watch(health_key(name)):
            if entry is not None and entry.value:
                return


async def start(module: str, nats_url: str, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", module, "--nats-url", nats_url, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT,
    )  # fmt: skip


async def test_the_reviewer_process_reviews_and_stops_cleanly(
    bus: Bus, nats_url: str, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """Run as a process it reviews a ready unit, and SIGTERM stops it with exit code 0."""
    agent = Scripted(agent_dir)
    repo = setup_repo(tmp_path, project, {"command": agent.command, "roster": ["bob"]})
    head = repo.commit({"src/app.py": "def total(xs):\n    return sum(xs)\n"}, parent=repo.base)
    process = await start("workers.reviewer", nats_url, "--repo", str(repo.path))
    try:
        await ready(bus, project, "U1", head)
        await wait_log(bus, project, count(RoundClosed), timeout=60)
        await beaconed(bus, "reviewer")
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, stderr.decode()
    assert b'"daemon.stopped"' in stderr


@pytest.mark.parametrize("module", ["workers.reviewer", "workers.investigator"])
async def test_a_bad_config_is_one_line_and_exit_2(
    nats_url: str, tmp_path: Path, module: str
) -> None:
    """A wrong [review] table stops the daemon before it starts, naming the field."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "loopbus.toml").write_text('[project]\nid = "demo"\n[review]\nceiling = -1\n')
    process = await start(module, nats_url, "--repo", str(repo))
    _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2
    (line,) = stderr.decode().strip().splitlines()[-1:]
    assert "review.ceiling = -1 is not valid" in line


async def test_without_a_repo_the_investigator_idles_until_stopped(bus: Bus, nats_url: str) -> None:
    """No --repo: nothing configured, the daemon idles, and stops cleanly on SIGTERM."""
    process = await start("workers.investigator", nats_url)
    assert process.stderr is not None
    async with asyncio.timeout(30):
        while b"investigator.idle" not in (line := await process.stderr.readline()):
            assert line, "the daemon exited before idling"
    await beaconed(bus, "investigator")
    process.send_signal(signal.SIGTERM)
    await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0
