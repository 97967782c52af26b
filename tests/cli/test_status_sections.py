"""`loopbus status` and `loopbus replay` alike: the verifier's and the wave review's record as
short lines per slice (state, verdict, counts, what is not had yet), never as the JSON of
the whole state, which is `--json`'s; and units listed in the same order."""

from __future__ import annotations

import asyncio
import json

from kernelkit import running

from bus import Bus
from schemas import (
    Actor,
    Event,
    FindingRaised,
    Outcome,
    UnitPlanned,
    UnitTransitioned,
    parse_target,
)
from schemas.ids import new_id
from schemas.merges import TrunkAdvanced
from schemas.scores import AxisScore
from schemas.slices import PlannedUnit, PlanSubmission, SlicePlan, SlicePlanAccepted
from schemas.verify import VERIFY_CRITERION, AcceptanceCheck, WaveVerified
from schemas.wave_review import WAVE_REVIEW_CRITERION, WaveReviewed
from workers.projector.daemon import ProjectorDaemon

from .conftest import loopbus

P = "till"
SYSTEM = Actor(role="system", principal="tests")


def accepted(*units: PlannedUnit, project: str = P) -> list[Event]:
    """Slice S1 planned and accepted with ``units``."""
    p = SlicePlan(slice="S1", units=list(units))
    planner = Actor(role="planner", principal="p1")
    submission = PlanSubmission(project=project, actor=planner, plan=p)
    return [
        submission,
        SlicePlanAccepted(project=project, actor=SYSTEM, plan=p, cause=submission.id),
        *(UnitPlanned(project=project, actor=SYSTEM, unit=u.id, slice="S1") for u in units),
    ]


def merged(unit_id: str, n: int, project: str = P) -> list[Event]:
    return [
        UnitTransitioned(
            project=project, actor=SYSTEM, unit=unit_id, state="done", by="merged",
            outcome=Outcome(summary="done", ended_by="merged"), commit=f"{n}" * 40,
        ),
        TrunkAdvanced(
            project=project, actor=SYSTEM, trunk="main", unit=unit_id, commit=f"{n}" * 40,
            merge=f"{n + 1}" * 40, tree="c" * 40, previous=f"{n - 1}" * 40, cause=new_id(),
        ),
    ]  # fmt: skip


def history() -> tuple[list[Event], dict[str, str]]:
    """S1's two waves merged; wave 0 verified (one finding open) and reviewed (rejected,
    re-opening U1); wave 1 neither verified nor reviewed yet."""
    u1 = PlannedUnit(id="U1", title="build U1", files=["src/u1.py"])
    u2 = PlannedUnit(id="U2", title="build U2", blocked_by=["U1"], files=["src/u2.py"])
    events = [*accepted(u1, u2), *merged("U1", 2)]
    events += merged("U2", 4)
    [plan_accepted] = [e for e in events if isinstance(e, SlicePlanAccepted)]
    acc = plan_accepted.id
    off = FindingRaised(
        project=P, actor=SYSTEM, producer="trunk_gate", target=parse_target("check:accept-1"),
        severity="high", criterion=VERIFY_CRITERION, message="the total is off by a cent",
        evidence={"accepted": acc, "wave": 0}, unit="U1", slice="S1",
    )  # fmt: skip
    verified = WaveVerified(
        project=P, actor=SYSTEM, slice="S1", accepted=acc, wave=0, trunk="3" * 40,
        scores=[AxisScore(axis="correctness", score=6, why="one rounding slip")],
        checks=[AcceptanceCheck(id="accept-1", command="pytest -k total", passed=False),
                AcceptanceCheck(id="accept-2", command="pytest -k cart", passed=True)],
        findings=[off.id], summary="checkout mostly works",
    )  # fmt: skip
    wide = FindingRaised(
        project=P, actor=SYSTEM, producer="reviewer", target=parse_target("code:src/u1.py:1-2"),
        severity="medium", criterion=WAVE_REVIEW_CRITERION, message="two modules round apart",
        evidence={"accepted": acc, "wave": 0}, unit="U1", slice="S1",
    )  # fmt: skip
    reviewed = WaveReviewed(
        project=P, actor=SYSTEM, slice="S1", accepted=acc, wave=0, base="1" * 40,
        head="3" * 40, axes=["correctness"], attribution={"src/u1.py": "U1"},
        verdict="reject", findings=[wide.id], reopened=["U1"],
    )  # fmt: skip
    events += [off, verified, wide, reviewed]
    return events, {"off": off.id, "wide": wide.id}


async def test_status_and_replay_show_verify_and_wave_review_as_lines(own_bus: Bus) -> None:
    events, ids = history()
    for event in events:
        last = (await own_bus.publish(event)).seq
    projector = ProjectorDaemon(own_bus)
    async with running(own_bus, projector):
        async with asyncio.timeout(30):
            while projector.checkpoint < last:
                await asyncio.sleep(0.05)
    url = ("--nats-url", own_bus.url)
    expected = [
        "verify: 1 wave recorded (0 unverified), 1 verifier finding open of 1, "
        "0 slices judged for SHIP",
        "  S1: wave 0 verified, 1 of 2 checks pass, 1 findings, 0 criteria unreached, "
        "scores correctness 6: checkout mostly works",
        f"  S1: wave 0 finding {ids['off']} open unit U1: the total is off by a cent",
        "  S1: not yet: wave 1 merged, no verifier run recorded",
        "wave review: 1 wave reviewed (0 without a review), 0 re-reviews had, "
        "1 finding open of 1, 2 merges seen",
        "  S1: wave 0 reject on 111111111111..333333333333 (1 files, 1 findings, re-opened U1)",
        f"  S1: wave 0 finding {ids['wide']} open unit U1: two modules round apart",
        "  S1: not yet: wave 1 merged, not reviewed",
        "  S1: not yet: unit U1 re-opened by wave 0, not re-reviewed",
    ]
    for command in ("status", "replay"):
        done = await asyncio.to_thread(loopbus, command, "--project", P, *url)
        assert done.code == 0, done.err
        lines = done.out.splitlines()
        # No state is dumped as JSON: no line opens or closes an object, or is a quoted key.
        assert not [s for s in lines if s.strip()[:1] in ("{", "}", '"', "[", "]")], done.out
        for line in expected:
            assert f"  {line}" in lines, (command, line, done.out)
    as_json = await asyncio.to_thread(loopbus, "status", "--project", P, "--json", *url)
    state = json.loads(as_json.out)["state"]
    [run] = state["verify"]["waves"].values()
    assert [c["command"] for c in run["checks"]] == ["pytest -k total", "pytest -k cart"]


def two_waves_merged(project: str) -> tuple[list[Event], str]:
    """Slice S1 of ``project``: U1 (wave 0) and U2 (wave 1) both merged; its acceptance."""
    u1 = PlannedUnit(id="U1", title="build U1", files=["src/u1.py"])
    u2 = PlannedUnit(id="U2", title="build U2", blocked_by=["U1"], files=["src/u2.py"])
    events = [
        *accepted(u1, u2, project=project),
        *merged("U1", 2, project),
        *merged("U2", 4, project),
    ]
    [plan_accepted] = [e for e in events if isinstance(e, SlicePlanAccepted)]
    return events, plan_accepted.id


async def test_not_yet_is_shown_only_for_what_the_project_uses(own_bus: Bus) -> None:
    """`not yet` says the loop waits for a verifier run or a wave review: only true where
    `[verify]` or `[review] wave` is configured, which status reads off the log (something of
    that kind recorded for the project). Elsewhere every open slice would say it waits."""
    uses_verify, acc = two_waves_merged(P)
    uses_verify.append(
        WaveVerified(project=P, actor=SYSTEM, slice="S1", accepted=acc, wave=0, trunk="3" * 40)
    )
    uses_neither, _ = two_waves_merged("ledger")
    for event in uses_verify + uses_neither:
        last = (await own_bus.publish(event)).seq
    projector = ProjectorDaemon(own_bus)
    async with running(own_bus, projector):
        async with asyncio.timeout(30):
            while projector.checkpoint < last:
                await asyncio.sleep(0.05)
    expected = {
        P: [
            "verify: 1 wave recorded (0 unverified), 0 verifier findings open of 0, "
            "0 slices judged for SHIP",
            "  S1: wave 0 verified, 0 of 0 checks pass, 0 findings, 0 criteria unreached",
            "  S1: not yet: wave 1 merged, no verifier run recorded",
            "wave review: 0 waves reviewed (0 without a review), 0 re-reviews had, "
            "0 findings open of 0, 2 merges seen",
        ],
        "ledger": [
            "verify: 0 waves recorded (0 unverified), 0 verifier findings open of 0, "
            "0 slices judged for SHIP",
            "wave review: 0 waves reviewed (0 without a review), 0 re-reviews had, "
            "0 findings open of 0, 2 merges seen",
        ],
    }
    for project, shown in expected.items():
        for command in ("status", "replay"):
            done = await asyncio.to_thread(
                loopbus, command, "--project", project, "--nats-url", own_bus.url
            )
            assert done.code == 0, done.err
            lines = done.out.splitlines()
            for line in shown:
                assert f"  {line}" in lines, (project, command, line, done.out)
            said = [s.strip() for s in lines if "not yet:" in s]
            assert said == [s.strip() for s in shown if "not yet:" in s], (project, command)


async def test_status_and_replay_list_units_in_one_order(own_bus: Bus) -> None:
    """Units planned as U2, U10, U1 and finished as U10, U1, U2, the projector writing each
    change as it comes: replay held them in the order first seen, status in the order last
    written. Both list them by id now, digits as numbers."""
    events: list[Event] = [
        UnitPlanned(project=P, actor=SYSTEM, unit=unit_id, slice="S1")
        for unit_id in ("U2", "U10", "U1")
    ]
    events += [
        UnitTransitioned(
            project=P, actor=SYSTEM, unit=unit_id, state="done", by="merged",
            outcome=Outcome(summary="done", ended_by="merged"), commit="1" * 40,
        )
        for unit_id in ("U10", "U1", "U2")
    ]  # fmt: skip
    projector = ProjectorDaemon(own_bus)
    async with running(own_bus, projector):
        for event in events:  # each folded and written before the next: as in a real run
            last = (await own_bus.publish(event)).seq
            async with asyncio.timeout(30):
                while projector.checkpoint < last:
                    await asyncio.sleep(0.05)
    shown = {}
    for command in ("status", "replay"):
        done = await asyncio.to_thread(loopbus, command, "--project", P, "--nats-url", own_bus.url)
        assert done.code == 0, done.err
        lines = done.out.splitlines()
        start = lines.index("    done (3)")
        shown[command] = [line.split()[0] for line in lines[start + 1 : start + 4]]
    assert shown["status"] == shown["replay"] == ["U1", "U2", "U10"], shown
