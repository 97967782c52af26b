"""Two merger processes on one remote repository (a bare repository reached by a file://
URL, each merger on a mirror of its own): trunk advances once per unit, never twice, and
its first-parent history stays one line — a lost compare-and-swap is retried on the
winner's trunk, never pushed over it."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from dulwich.objects import Commit
from dulwich.repo import Repo
from merger_scene import Scene, make_trunk

from schemas import UnitTransitioned
from schemas.merges import MergeReverted, TrunkAdvanced
from workers.repository import unit_branch

WAIT_S = 300.0
"""A bound for a stalled run to end with what it saw, never a timed assertion."""
UNITS = ("U1", "U2", "U3")


async def _merger(scene: Scene, nats_url: str, tmp: Path, name: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-P",
        "-m",
        "workers.merger",
        "--nats-url",
        nats_url,
        "--repo",
        scene.repo.path.as_uri(),
        "--mirror-dir",
        str(tmp / f"mirror-{name}"),
        "--fetch-every",
        "0.3",
        "--data-dir",
        str(tmp / f"data-{name}"),
        cwd=tmp,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "LOOPBUS_LOG_LEVEL": "info"},
    )


def _first_parent_line(path: Path, base: str) -> list[Commit]:
    """Trunk's commits from its head back to ``base`` by first parents (``base`` excluded);
    fails when the line never reaches ``base`` (trunk was pushed over, not advanced)."""
    line: list[Commit] = []
    with Repo(str(path)) as repo:
        sha = repo.refs[b"refs/heads/main"]
        while sha.decode() != base:
            commit = repo[sha]
            assert isinstance(commit, Commit)
            line.append(commit)
            assert commit.parents, f"trunk's history does not reach the base {base}"
            sha = commit.parents[0]
    return line


def _trailer(commit: Commit, name: str) -> str | None:
    for row in commit.message.decode().splitlines():
        key, _, value = row.partition(": ")
        if key == name:
            return value.strip()
    return None


async def test_two_mergers_on_one_remote_advance_trunk_once_per_unit(
    scene: Scene, nats_url: str, tmp_path: Path
) -> None:
    base = make_trunk(scene)
    heads = {}
    for unit in UNITS:
        head = scene.repo.commit(base, {f"{unit.lower()}.py": f"NAME = {unit!r}\n"}, unit)
        with Repo(str(scene.repo.path)) as repo:  # the builder pushed the unit's branch
            repo.refs[f"refs/heads/{unit_branch(scene.project, unit)}".encode()] = head.encode()
        heads[unit] = head
        await scene.ready_unit(unit, head)
        await scene.approve(unit, head)
    mergers = [await _merger(scene, nats_url, tmp_path, name) for name in ("a", "b")]
    try:
        async with asyncio.timeout(WAIT_S):
            while True:
                merged = {e.unit for e in await scene.events(UnitTransitioned) if e.by == "merged"}
                if merged == set(UNITS):
                    break
                for process in mergers:
                    assert process.returncode is None, "a merger exited"
                await asyncio.sleep(0.5)
    finally:
        for process in mergers:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
        errors = [await asyncio.wait_for(p.communicate(), 60) for p in mergers]
        for name, (_out, err) in zip("ab", errors, strict=True):  # kept for a failure's story
            (tmp_path / f"merger-{name}.log").write_bytes(err)
    lost = sum(err.count(b"merger.trunk_moved_under_advance") for _out, err in errors)
    print(f"races lost and retried: {lost}")

    line = _first_parent_line(scene.repo.path, base)
    landed = [_trailer(c, "Loopbus-Unit") for c in reversed(line)]
    assert sorted(u for u in landed if u is not None) == sorted(UNITS), landed
    events = await scene.events()
    merged_twice = [e.unit for e in events if isinstance(e, UnitTransitioned) and e.by == "merged"]
    assert sorted(merged_twice) == sorted(UNITS), "a unit merged twice"
    assert not [e for e in events if isinstance(e, MergeReverted)], "a lost race was reverted"
    advances = [e for e in events if isinstance(e, TrunkAdvanced)]
    assert sorted(a.unit for a in advances) == sorted(UNITS), "an advance recorded twice"
    on_trunk = {c.id.decode() for c in line}
    assert {a.merge for a in advances} <= on_trunk, "an advance names a commit off trunk"
    for unit, head in heads.items():
        [merge] = [c for c in line if _trailer(c, "Loopbus-Unit") == unit]
        assert merge.parents[1].decode() == head
