"""One merger process serving two projects' repositories (``--repo`` twice), as a real
subprocess: it lands an approved unit on each project's trunk."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from merger_scene import Scene, make_trunk

from bus import Bus
from schemas import UnitTransitioned

WAIT_S = 120.0


async def test_one_process_merges_units_of_two_projects(
    bus: Bus, nats_url: str, tmp_path: Path, project: str
) -> None:
    """``--repo A=PATH --repo PATH``: each project's approved unit is merged onto its own
    trunk by the one process (the second project read from its trunk's loopbus.toml)."""
    scenes = [Scene(bus, project, tmp_path / "a"), Scene(bus, f"{project}-b", tmp_path / "b")]
    heads = []
    for scene in scenes:
        base = make_trunk(scene)
        head = scene.repo.commit(base, {"helper.py": "def helper():\n    return 1\n"}, "helper")
        await scene.ready_unit("U1", head)
        await scene.approve("U1", head)
        heads.append((base, head))
    first, second = scenes
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "workers.merger", "--nats-url", nats_url,
        "--repo", f"{first.project}={first.repo.path}", "--repo", str(second.repo.path),
        "--data-dir", str(tmp_path / "data"),
        cwd=tmp_path, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "LOOPBUS_LOG_LEVEL": "warning"},
    )  # fmt: skip
    try:
        async with asyncio.timeout(WAIT_S):
            for scene in scenes:
                while not [e for e in await scene.events(UnitTransitioned) if e.by == "merged"]:
                    assert process.returncode is None, "the merger exited"
                    await asyncio.sleep(0.5)
    finally:
        process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), 60)
    assert code == 0
    for scene, (base, head) in zip(scenes, heads, strict=True):
        assert scene.repo.parents(scene.repo.trunk()) == [base, head]
