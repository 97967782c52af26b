"""The verifier and the dispatcher on a real NATS server, with a real git repository and a
stand-in verify command run through the agent runner.

The units daemon, the builders, the reviewer and the merger are stood in by the test: it
commits each unit's change on trunk and publishes the facts and claims they would.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest
from slice_helpers import PLANNER, SYSTEM, commit, of_type, plan, unit
from verifykit import (
    FULL_MARKS,
    StandInVerifier,
    finished,
    green_trunk,
    loop,
    until,
    verify_repo,
)

from bus import Bus, read
from schemas import (
    Event,
    FindingRaised,
    new_id,
    project_subjects,
)
from schemas.lifecycle import FindingDismissed
from schemas.slices import PlanSubmission, SliceClosed, UnitDispatched
from schemas.verify import SliceShipJudged, VerifyBrief, WaveVerified
from workers.gates.signing import Signer

MARKERS = ("BUILDER-SUMMARY-MARK", "DIFF-MARK", "REVIEW-MARK")
"""Texts only builders, diffs and reviews carry: none may reach the verifier's brief."""

ONE_PART = (
    f'{sys.executable} -c "import glob; n = sum(int(open(f).read()) for f in '
    "glob.glob('part_*.txt')); assert n == 1, f'{n} parts switched on, the spec allows 1'\""
)


async def build_wave(
    bus: Bus, project: str, path: Path, parts: dict[str, str], signer: Signer
) -> str:
    """Submit a one-wave slice of one unit per part, wait for the dispatches, merge each
    unit's part on trunk (the last on a green trunk) and report them done; trunk's head at
    the wave's end."""
    units = [unit(u, files=[f"part_{u.lower()}.txt"]) for u in parts]
    await bus.publish(PlanSubmission(project=project, actor=PLANNER, plan=plan("S1", *units)))
    await until(bus, project, lambda e: len(of_type(e, UnitDispatched)) == len(parts))
    head = ""
    for unit_id, value in parts.items():
        name = f"part_{unit_id.lower()}.txt"
        head = commit(path, {name: value}, message=f"DIFF-MARK {unit_id}: switch on {name}")
        last = unit_id == list(parts)[-1]
        for event in [
            *(green_trunk(signer, project, path, head) if last else []),
            *finished(project, unit_id, head),
        ]:
            await bus.publish(event)
    return head


async def test_a_wave_whose_union_fails_the_verifier_holds_the_close_and_does_not_ship(
    bus: Bus, project: str, tmp_path: Path, signer: Signer, agent_dir: Path
) -> None:
    """Each unit switches on one part (alone, each satisfies "one part on"); together trunk
    has two. The verifier, told only the criteria and trunk, runs its own check on trunk,
    finds it, and the slice does not close while the finding is open; dismissed, it closes
    not shipped, naming the finding. Its brief carries no builder, diff or review text."""
    verifier = StandInVerifier(agent_dir, ONE_PART, scores=FULL_MARKS)
    path = tmp_path / "repo"
    verify_repo(path, project, verifier)
    async with loop(bus, project, path, signer) as d:
        trunk = await build_wave(bus, project, path, signer=signer, parts={"A": "1", "B": "1"})
        events, seq = await until(bus, project, lambda e: bool(of_type(e, WaveVerified)))
        await asyncio.wait_for(d.wait_settled(seq), 30)
        [run] = of_type(events, WaveVerified)
        [found] = [f for f in of_type(events, FindingRaised) if f.id in run.findings]
        assert run.trunk == trunk and run.wave == 0 and not run.error
        assert [c.passed for c in run.checks] == [False]
        assert "2 parts switched on" in found.message and found.severity == "high"
        settled = [e async for e in _log(bus, project)]
        assert not of_type(settled, SliceClosed), "closed with a verifier finding open"

        await bus.publish(
            FindingDismissed(
                project=project,
                actor=SYSTEM,
                finding=found.id,
                reason="wont-fix",
                why="accepted for now",
                claim=new_id(),
                by="operator:alice",
            )
        )
        events, _ = await until(bus, project, lambda e: bool(of_type(e, SliceShipJudged)))
    [judged] = of_type(events, SliceShipJudged)
    assert judged.shipped is False
    assert any(found.id in r and "dismissed" in r for r in judged.reasons), judged.reasons

    [raw] = verifier.briefs()
    brief = msgspec.json.decode(raw, type=VerifyBrief)
    assert brief.units == ["A", "B"] and brief.trunk == trunk
    assert brief.boot.command.endswith("-c 'print(1)'")
    for marker in MARKERS:
        assert marker not in raw, f"{marker} reached the verifier's brief"


@pytest.mark.parametrize(
    ("correctness", "shipped"),
    [pytest.param(5, False, id="below-floor-not-shipped"), pytest.param(9, True, id="ships")],
)
async def test_a_slice_ships_only_when_every_floor_is_met(
    bus: Bus,
    project: str,
    tmp_path: Path,
    signer: Signer,
    agent_dir: Path,
    correctness: int,
    shipped: bool,
) -> None:
    """The verifier's check passes and it finds nothing; the slice closes, and SHIP is judged
    from its scores against the floors: correctness 5 under a floor of 8 is not shipped, and
    says so; 9 ships."""
    scores = [s for s in FULL_MARKS if s["axis"] != "correctness"]
    scores.append({"axis": "correctness", "score": correctness, "why": "edge cases"})
    verifier = StandInVerifier(agent_dir, ONE_PART, scores=scores)
    path = tmp_path / "repo"
    verify_repo(path, project, verifier)
    async with loop(bus, project, path, signer):
        await build_wave(bus, project, path, signer=signer, parts={"A": "1"})
        events, _ = await until(bus, project, lambda e: bool(of_type(e, SliceShipJudged)))
    [closed] = of_type(events, SliceClosed)
    [judged] = of_type(events, SliceShipJudged)
    assert closed.boot.outcome == "pass"
    assert judged.shipped is shipped
    if not shipped:
        assert judged.reasons == ["verifier: correctness scored 5, below its floor 8"]
    else:
        assert judged.reasons == []


async def _log(bus: Bus, project: str) -> AsyncIterator[Event]:
    async for record in read(bus, subjects=[project_subjects(project)]):
        if record.event is not None:
            yield record.event


async def test_a_unit_over_the_size_bound_closes_not_shipped_and_says_so(
    bus: Bus, project: str, tmp_path: Path, signer: Signer, agent_dir: Path
) -> None:
    """A unit whose change touched more lines than ``max_unit_lines`` does not hold the
    loop: the slice closes, not shipped, naming the unit and its size."""
    verifier = StandInVerifier(agent_dir, f"{sys.executable} -c pass", scores=FULL_MARKS)
    path = tmp_path / "repo"
    verify_repo(path, project, verifier)
    async with loop(bus, project, path, signer, max_unit_lines=2):
        await build_wave(bus, project, path, signer=signer, parts={"A": "a\nb\nc\n"})
        events, _ = await until(bus, project, lambda e: bool(of_type(e, SliceShipJudged)))
    [judged] = of_type(events, SliceShipJudged)
    assert judged.shipped is False
    assert judged.reasons == ["unit A changed 3 lines, over the bound of 2 ([ship] max_unit_lines)"]


async def test_the_next_wave_waits_for_the_verifier_and_each_wave_sees_its_own_trunk(
    bus: Bus, project: str, tmp_path: Path, signer: Signer, agent_dir: Path
) -> None:
    """B waits on A, so A is wave 0 and B wave 1: B is dispatched only once wave 0 is
    verified, and each verification ran on trunk as its own wave left it."""
    verifier = StandInVerifier(agent_dir, f"{sys.executable} -c pass", scores=FULL_MARKS)
    path = tmp_path / "repo"
    verify_repo(path, project, verifier)
    units = [unit("A", files=["part_a.txt"]), unit("B", "A", files=["part_b.txt"])]
    async with loop(bus, project, path, signer):
        await bus.publish(PlanSubmission(project=project, actor=PLANNER, plan=plan("S1", *units)))
        await until(bus, project, lambda e: len(of_type(e, UnitDispatched)) == 1)
        after_a = commit(path, {"part_a.txt": "1"}, message="A")
        for event in finished(project, "A", after_a):
            await bus.publish(event)
        await until(bus, project, lambda e: len(of_type(e, UnitDispatched)) == 2)
        after_b = commit(path, {"part_b.txt": "1"}, message="B")
        for event in [
            *green_trunk(signer, project, path, after_b),
            *finished(project, "B", after_b),
        ]:
            await bus.publish(event)
        events, _ = await until(bus, project, lambda e: bool(of_type(e, SliceShipJudged)))
    order = [
        (type(e).__name__, getattr(e, "unit", None) or getattr(e, "wave", None))
        for e in events
        if isinstance(e, UnitDispatched | WaveVerified)
    ]
    assert order == [
        ("UnitDispatched", "A"),
        ("WaveVerified", 0),
        ("UnitDispatched", "B"),
        ("WaveVerified", 1),
    ]
    assert [r.trunk for r in of_type(events, WaveVerified)] == [after_a, after_b]
    briefs = [msgspec.json.decode(b, type=VerifyBrief) for b in verifier.briefs()]
    assert [(b.wave, b.units, b.trunk) for b in briefs] == [
        (0, ["A"], after_a),
        (1, ["B"], after_b),
    ]
    [judged] = of_type(events, SliceShipJudged)
    assert judged.shipped, judged.reasons
