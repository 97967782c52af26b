"""A merge conflict resolved by the builder, through every daemon of a real ``loopbus up``.

Two units, dispatched on one trunk commit, change the same line of one Python file. One
merges; the other's candidate conflicts with the trunk that merge made. Its next brief
carries the conflict, the test's builder command (written from docs/agents.md) resolves it
in the worktree, the adapter records a merge of trunk into the unit, and the unit merges:
both end DONE. Which unit merges first is for the daemons to decide; every assertion
holds either way.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conflictkit import ConflictBuilder, builder_folder
from dulwich import porcelain
from dulwich.repo import Repo
from integrity.test_hostile_agent import Loop, running_up

from bus import connect_once
from schemas import Actor, Event, UnitPlanned, UnitTransitioned
from schemas.merges import MergeConflicted
from schemas.reports import CommitReport
from schemas.slices import UnitDispatched

pytestmark = pytest.mark.slow

P = "clash"
SYSTEM = Actor(role="system", principal="tests")
WAIT_S = 300.0
BASE = "def total(xs):\n    return 0\n"
EDITS = {
    "U1": "def total(xs):\n    return sum(xs)\n",
    "U2": "def total(xs):\n    return len(xs)\n",
}
RESOLVED = "def total(xs):\n    return sum(xs) if xs else len(xs)\n"
REVIEWER = 'import json, sys\njson.load(sys.stdin)\nprint(json.dumps({"verdict": "approve"}))\n'


def repository(root: Path, agent: ConflictBuilder) -> Path:
    """Trunk: app.py and a loopbus.toml naming the test's builder and reviewer."""
    folder = root / "repo"
    folder.mkdir()
    reviewer = agent.folder / "reviewer.py"
    reviewer.write_text(REVIEWER)
    (folder / "loopbus.toml").write_text(
        f'[project]\nid = "{P}"\n\n[[check]]\nid = "ok"\ncommand = "true"\n'
        'parser = "exit-code"\n\n[build]\n'
        f"command = {json.dumps(agent.command)}\n"
        'roster = ["b1"]\ntimeout = 120\nmode = "long"\n\n[review]\n'
        f"command = {json.dumps(f'{sys.executable} {reviewer}')}\n"
        'roster = ["r1"]\ntimeout = 60\n\n[agents]\n'
        f"writable = [{json.dumps(str(agent.folder))}]\n"
    )
    (folder / "app.py").write_text(BASE)
    with Repo.init(str(folder)) as opened:
        opened.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
        porcelain.add(opened, [str(folder / "loopbus.toml"), str(folder / "app.py")])
        porcelain.commit(opened, b"base", author=b"a <a@x>", committer=b"a <a@x>")
    return folder


@pytest.fixture
def loop(tmp_path: Path) -> Iterator[tuple[Loop, ConflictBuilder, Path]]:
    with builder_folder() as agent:
        for unit, edit in EDITS.items():
            agent.plan(unit, [{"write": {"app.py": edit}}, {"write": {"app.py": RESOLVED}}])
        repo = repository(tmp_path, agent)
        with running_up(tmp_path / "data", "--repo", str(repo)) as started:
            yield started, agent, repo


async def dispatch_both(loop: Loop, repo: Path) -> str:
    """Both units planned and dispatched on trunk's commit, as the system; returns it."""
    with Repo(str(repo)) as opened:
        base = opened.refs[b"refs/heads/main"].decode()
    bus = await connect_once(loop.url, creds=loop.cred("system"))
    try:
        for position, unit in enumerate(EDITS):
            shape: dict[str, Any] = dict(
                slice="S1", unit=unit, title=f"total, {unit}'s way", files=["app.py"], criteria=[]
            )
            await bus.publish(UnitPlanned(project=P, actor=SYSTEM, **shape))
            await bus.publish(
                UnitDispatched(
                    project=P, actor=SYSTEM, wave=0, sub_wave=0, position=position, base=base,
                    **shape,
                )
            )  # fmt: skip
    finally:
        await bus.close()
    return base


async def until_done(loop: Loop) -> list[Event]:
    async with asyncio.timeout(WAIT_S):
        while True:
            events = await loop.events(P)
            done = {e.unit for e in events if isinstance(e, UnitTransitioned) and e.state == "done"}
            failed = [e for e in events if isinstance(e, UnitTransitioned) and e.state == "failed"]
            assert not failed, failed
            if done == set(EDITS):
                return events
            await asyncio.sleep(0.5)


async def test_a_conflicting_unit_is_resolved_by_its_builder_and_merges(
    loop: tuple[Loop, ConflictBuilder, Path],
) -> None:
    """Exactly one unit conflicts; its next brief carries trunk's head, app.py's three
    versions and the function the driver could not combine; its resolution is a merge
    commit of trunk into the unit; both units end DONE and trunk holds the resolution."""
    started, agent, repo = loop
    base = await dispatch_both(started, repo)
    events = await until_done(started)

    [conflicted] = [e for e in events if isinstance(e, MergeConflicted)]
    loser = conflicted.unit
    (winner,) = set(EDITS) - {loser}
    assert conflicted.paths == ["app.py"]
    briefs = [call["brief"] for call in agent.calls(loser)]
    assert [b["conflict"] is not None for b in briefs] == [False, True]
    conflict = briefs[1]["conflict"]
    assert briefs[1]["base"] == conflicted.head
    assert conflict["trunk"] == conflicted.base and conflict["merge_base"] == base
    assert conflict["finding"] == conflicted.finding
    [file] = conflict["files"]
    assert (file["path"], file["base"], file["unit"], file["trunk"]) == (
        "app.py",
        BASE,
        EDITS[loser],
        EDITS[winner],
    )
    [region] = file["regions"]
    assert (region["kind"], region["name"], region["reason"]) == (
        "function",
        "total",
        "both-modified",
    )
    assert "<<<<<<< ours (function total)" in agent.calls(loser)[1]["files"]["app.py"]

    resolution = [e for e in events if isinstance(e, CommitReport) and e.unit == loser][-1]
    with Repo(str(repo)) as opened:
        made = opened[resolution.sha.encode()]
        assert made.parents == [conflicted.head.encode(), conflicted.base.encode()]
        trunk = opened[opened.refs[b"refs/heads/main"]]
        _mode, blob = opened[trunk.tree].lookup_path(opened.__getitem__, b"app.py")  # type: ignore[attr-defined]
        assert opened[blob].data == RESOLVED.encode()  # type: ignore[attr-defined]
    [done] = [
        e
        for e in events
        if isinstance(e, UnitTransitioned) and e.unit == loser and e.state == "done"
    ]
    assert done.commit == resolution.sha
