"""The shipper on a real server and a real repository: a credential in trunk's history
freezes dispatch until an operator settles it; a closed slice becomes a branch, a tag, a PR
description and a bundle that a stand-in ship command receives."""

from __future__ import annotations

import asyncio
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelkit import running
from shipkit import SYSTEM, closed_slice, commit, git, make_repo

from bus import Bus, read
from loopbus.ship_render import render_shipping
from projections import shipping
from projections.intents import Intent, Publish, PublishIf
from schemas import Event, FindingRaised, FindingResolved, project_subjects
from schemas.ship import SECRET_CRITERION, ShipCommandRan, SliceBundled, TrunkScanned
from schemas.slices import UnitDispatched
from workers.dispatcher.daemon import Dispatcher
from workers.dispatcher.decide import Options, decide, held
from workers.kernel import World
from workers.kernel.daemon import system_actor
from workers.shipper.daemon import Shipper, ShipRepo

AWS_KEY = "AKIA" + "ABCDEFGHIJKLMNOP"  # split, so this file is not itself a finding


async def log_of(bus: Bus, project: str) -> list[Event]:
    return [r.event async for r in read(bus, subjects=[project_subjects(project)]) if r.event]


async def until(bus: Bus, project: str, kind: type, count: int = 1) -> list[Event]:
    for _ in range(600):
        events = await log_of(bus, project)
        if sum(isinstance(e, kind) for e in events) >= count:
            return events
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {kind.__name__} on the log of {project}")


def dispatches(intents: list[Intent]) -> list[UnitDispatched]:
    return [
        i.event
        for i in intents
        if isinstance(i, Publish | PublishIf) and isinstance(i.event, UnitDispatched)
    ]


def dispatcher_world(project: str, events: list[Event]) -> World:
    return World(
        project=project,
        states={fold.name: fold.fold(events) for fold in Dispatcher.folds},
        seqs={},
        now=datetime.now(UTC),
        actor=system_actor("dispatcher"),
        outside={},
        folded=len(events),
    )


async def test_a_secret_deleted_from_the_tree_still_freezes_dispatch_until_settled(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    """A key added in one commit and deleted in the next is found in history; the
    dispatcher holds every dispatch while the finding is open and resumes once the
    operator's resolution (the lifecycle daemon's fact) closes it."""
    repo = tmp_path / "repo"
    make_repo(repo, project)
    added = commit(repo, {"src/settings.py": f'KEY = "{AWS_KEY}"\n'}, "add settings")
    commit(repo, {"src/settings.py": None}, "oops, remove the key")
    assert (
        AWS_KEY
        not in subprocess.run(
            ["git", "-C", str(repo), "grep", "-I", "AKIA", "HEAD"], capture_output=True, text=True
        ).stdout
    ), "the tree no longer holds it"
    shipper = Shipper({project: ShipRepo(path=repo, out=tmp_path / "out", trunk="main")})
    async with running(bus, shipper):
        events = await until(bus, project, TrunkScanned)
    [scanned] = [e for e in events if isinstance(e, TrunkScanned)]
    [found] = [e for e in events if isinstance(e, FindingRaised)]
    assert found.criterion == SECRET_CRITERION and found.evidence["commit"] == added
    assert scanned.findings == [found.id] and scanned.commits == 3
    assert held(dispatcher_world(project, events)).startswith("1 open finding")
    assert any(
        "HOLD: 1 open finding" in line for line in render_shipping(shipping.FOLD.fold(events))
    )
    # The dispatcher's own decision: an accepted plan's first unit is not dispatched.
    waiting = [*events, *closed_slice(project, "S2")[:3]]
    assert not dispatches(decide(dispatcher_world(project, waiting), Options()))

    settled = FindingResolved(project=project, actor=SYSTEM, finding=found.id, why="rotated")
    assert held(dispatcher_world(project, [*events, settled])) == ""
    assert dispatches(decide(dispatcher_world(project, [*waiting, settled]), Options()))

    # Incremental: the next scan reads only new commits, so a settled secret stays settled.
    commit(repo, {"src/calc.py": "x = 2\n"}, "more")
    for event in [*closed_slice(project, "S1"), settled]:
        await bus.publish(event)
    async with running(bus, shipper):
        events = await until(bus, project, TrunkScanned, count=2)
    second = [e for e in events if isinstance(e, TrunkScanned)][-1]
    assert second.commits == 1 and second.findings == []
    assert shipping.hold(shipping.FOLD.fold(events)) == ""


STAND_IN = """#!{python}
import os, subprocess, sys
bundle, description = sys.argv[1], sys.argv[2]
assert bundle == os.environ["LOOPBUS_SHIP_BUNDLE"], "argv and env agree"
heads = subprocess.run(["git", "bundle", "list-heads", bundle], capture_output=True, text=True)
with open(os.environ["RECEIVED"], "w") as out:
    out.write(os.environ["LOOPBUS_SHIP_BRANCH"] + "\\n" + heads.stdout + "\\n")
    out.write(open(description).read())
print("draft PR: https://forge.example/pr/1")
"""


async def test_a_closed_slice_becomes_a_bundle_the_ship_command_receives(
    bus: Bus, project: str, tmp_path: Path, monkeypatch: Any
) -> None:
    """Branch and annotated tag named after the slice, a Markdown description carrying the
    risk report, a bundle that clones to trunk's commit; the stand-in ship command receives
    both paths and its run is a fact."""
    repo = tmp_path / "repo"
    trunk = make_repo(repo, project)
    received = tmp_path / "received.txt"
    script = tmp_path / "open-draft-pr"
    script.write_text(STAND_IN.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    for event in closed_slice(project, "S1"):
        await bus.publish(event)
    shipper = Shipper(
        {
            project: ShipRepo(
                path=repo,
                out=tmp_path / "out",
                trunk="main",
                command=f"env RECEIVED={received} {script}",
            )
        }
    )
    async with running(bus, shipper):
        events = await until(bus, project, ShipCommandRan)
    [bundled] = [e for e in events if isinstance(e, SliceBundled)]
    [ran] = [e for e in events if isinstance(e, ShipCommandRan)]
    assert (bundled.branch, bundled.tag, bundled.commit) == (
        "loopbus/ship/S1",
        "loopbus-ship-S1",
        trunk,
    )
    assert git(repo, "cat-file", "-t", "loopbus-ship-S1") == "tag", "an annotated tag"
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "-b", "loopbus/ship/S1", bundled.bundle, str(clone))
    assert git(clone, "rev-parse", "HEAD") == trunk
    text = Path(bundled.description).read_text()
    assert "# Slice S1" in text and "### Not run" in text and "check docs" in text
    assert "mkdocs-strict" not in text, "no command that did not run"
    assert ran.outcome == "pass" and "forge.example/pr/1" in ran.output
    got = received.read_text()
    assert got.startswith("loopbus/ship/S1\n") and "refs/tags/loopbus-ship-S1" in got
    assert "# Slice S1" in got


async def test_a_ship_command_that_fails_is_recorded_as_failed_and_not_run_again(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    """A ship command exiting non-zero is a `fail` fact with its exit code; a restarted
    shipper does not run it again (one run per bundle, from the log)."""
    repo = tmp_path / "repo"
    make_repo(repo, project)
    for event in closed_slice(project, "S1"):
        await bus.publish(event)
    runs = tmp_path / "runs"
    ship = ShipRepo(
        path=repo,
        out=tmp_path / "out",
        trunk="main",
        command=f"sh -c 'echo ran >> {runs}; echo no forge; exit 3'",
    )
    async with running(bus, Shipper({project: ship})):
        events = await until(bus, project, ShipCommandRan)
    [ran] = [e for e in events if isinstance(e, ShipCommandRan)]
    assert (ran.outcome, ran.exit_code) == ("fail", 3) and "no forge" in ran.output
    async with running(bus, Shipper({project: ship})) as kernel:
        await kernel.wait_settled(await bus.stream_last_seq())
    assert runs.read_text() == "ran\n", "run once, even across a restart"


async def test_a_branch_of_the_slices_name_made_elsewhere_is_never_shipped(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    """An agent that made `loopbus/ship/S1` at its own commit does not get it shipped: the
    slice is not bundled and a finding says why."""
    repo = tmp_path / "repo"
    make_repo(repo, project)
    git(repo, "checkout", "-q", "-b", "loopbus/ship/S1")
    commit(repo, {"src/evil.py": "import os\n"}, "agent's own")
    git(repo, "checkout", "-q", "main")
    for event in closed_slice(project, "S1"):
        await bus.publish(event)
    ship = ShipRepo(path=repo, out=tmp_path / "out", trunk="main", command="true")
    async with running(bus, Shipper({project: ship})):
        events = await until(bus, project, FindingRaised)
    [refused] = [e for e in events if isinstance(e, FindingRaised)]
    assert refused.criterion == "ship-bundle" and "already points at" in refused.message
    assert not any(isinstance(e, SliceBundled | ShipCommandRan) for e in events)


async def test_only_a_slice_judged_shipped_is_bundled(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    """A slice the dispatcher closed but judged not shipped (a floor unmet) becomes no
    branch, tag or bundle; a shipped one beside it does."""
    repo = tmp_path / "repo"
    make_repo(repo, project)
    for event in [
        *closed_slice(project, "S1", shipped=False),
        *closed_slice(project, "S2", shipped=True),
    ]:
        await bus.publish(event)
    async with running(bus, Shipper({project: ShipRepo(repo, tmp_path / "out", "main")})) as k:
        events = await until(bus, project, SliceBundled)
        await k.wait_settled(await bus.stream_last_seq())
    events = await until(bus, project, SliceBundled)
    assert [e.slice for e in events if isinstance(e, SliceBundled)] == ["S2"]
    assert git(repo, "branch", "--list", "loopbus/ship/S1") == ""
