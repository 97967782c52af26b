"""The merger as its commands run it: ``python -m workers.merger`` and
``loopbus merge-driver``."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from merger_scene import Scene, make_trunk

from bus import Bus
from loopbus.supervisor import DAEMONS, UpSettings
from schemas import UnitTransitioned
from workers.runtime import check_health

WAIT_S = 60.0


async def _spawn(*args: str, nats_url: str, cwd: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "workers.merger",
        "--nats-url",
        nats_url,
        *args,
        cwd=cwd,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "LOOPBUS_LOG_LEVEL": "info"},
    )


async def _stop(process: asyncio.subprocess.Process) -> int:
    process.send_signal(signal.SIGTERM)
    return await asyncio.wait_for(process.wait(), WAIT_S)


async def test_daemon_without_a_repository_idles_healthy(
    bus: Bus, nats_url: str, tmp_path: Path
) -> None:
    """Without --repo the daemon idles, beats its health beacon and stops cleanly on SIGTERM.

    The beacon waited for is this process's (its pid): a merger of an earlier test on the
    same server may have left a fresh one, and SIGTERM sent before this daemon is up kills
    it by the default action (the suite in random order found that)."""
    process = await _spawn("--data-dir", str(tmp_path / "data"), nats_url=nats_url, cwd=tmp_path)
    try:
        async with asyncio.timeout(WAIT_S):
            while getattr(await check_health(bus, "merger"), "pid", None) != process.pid:
                assert process.returncode is None, "the merger exited"
                await asyncio.sleep(0.2)
    finally:
        code = await _stop(process)
    assert code == 0


async def test_daemon_process_merges_an_approved_unit(
    scene: Scene, nats_url: str, tmp_path: Path
) -> None:
    """The merger process finds its project on trunk and merges an approved unit."""
    base = make_trunk(scene)
    head = scene.repo.commit(base, {"helper.py": "def helper():\n    return 1\n"}, "helper")
    await scene.ready_unit("U1", head)
    await scene.approve("U1", head)
    process = await _spawn(
        "--repo",
        str(scene.repo.path),
        "--data-dir",
        str(tmp_path / "data"),
        nats_url=nats_url,
        cwd=tmp_path,
    )
    try:
        async with asyncio.timeout(WAIT_S * 2):
            while not [e for e in await scene.events(UnitTransitioned) if e.by == "merged"]:
                assert process.returncode is None, "the merger exited"
                await asyncio.sleep(0.5)
    finally:
        assert await _stop(process) == 0
    assert scene.repo.parents(scene.repo.trunk()) == [base, head]


def test_supervisor_runs_the_merger_on_the_configured_repository(tmp_path: Path) -> None:
    """``loopbus up`` runs the merger with its data dir, and with ``--repo`` when one is set."""
    [spec] = [d for d in DAEMONS if d.name == "merger"]
    bare = UpSettings(nats_url="nats://x:1", data_dir=tmp_path, heartbeat_lapse="5m")
    assert spec.module == "workers.merger"
    assert spec.args(bare) == ["--data-dir", str(tmp_path)]
    with_repo = UpSettings(
        nats_url="nats://x:1", data_dir=tmp_path, heartbeat_lapse="5m", repo=tmp_path / "r"
    )
    assert spec.args(with_repo) == ["--data-dir", str(tmp_path), "--repo", str(tmp_path / "r")]


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        pytest.param(["base.py", "ours.py", "theirs.py", "shop.py"], 0, id="false-conflict-merges"),
        pytest.param(["base.py"], 2, id="too-few-arguments"),
    ],
)
def test_loopbus_merge_driver_command(tmp_path: Path, argv: list[str], code: int) -> None:
    """`loopbus merge-driver` merges two additions into OURS; bad arguments: one line, exit 2."""
    base = "def total(xs):\n    return sum(xs)\n"
    (tmp_path / "base.py").write_text(base)
    (tmp_path / "ours.py").write_text(base + "\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n")
    (tmp_path / "theirs.py").write_text(base + "\n\ndef peak(xs):\n    return max(xs)\n")
    loopbus = Path(sys.executable).with_name("loopbus")
    done = subprocess.run(
        [str(loopbus), "merge-driver", *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == code
    merged = (tmp_path / "ours.py").read_text()
    if code == 0:
        assert "def mean(xs)" in merged and "def peak(xs)" in merged
    else:
        assert done.stderr.count("\n") == 1
        assert "expected 4 or 5 arguments" in done.stderr
