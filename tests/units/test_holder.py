"""Who holds a unit's round: the claimant whose started report the system accepted, and
nobody who merely says so (a refused start, a later claim by another principal)."""

from __future__ import annotations

import pytest
from unitkit import (
    SHA_A,
    SHA_B,
    answered,
    claim,
    log_events,
    plan,
    transitions,
    units_daemon,
    wait_log,
)

from bus import Bus
from projections import units as units_fold
from schemas import Actor, Event, FindingRaised
from schemas.reports import UnitReport

B1 = Actor(role="builder", principal="b1")
B2 = Actor(role="builder", principal="b2")
MALLORY = Actor(role="builder", principal="mallory")
OPERATOR = Actor(role="operator", principal="alice")


async def holders(bus: Bus, project: str) -> dict[str, units_fold.UnitView]:
    state = units_fold.initial()
    for event in await log_events(bus, project):
        state = units_fold.apply(state, event)
    return state.units


async def test_the_accepted_start_makes_the_holder_and_nothing_after_it_does(
    bus: Bus, nats_url: str, project: str
) -> None:
    """b1's accepted start makes it U1's holder; mallory's refused start and its refused
    commit on U1 do not take the round. An operator who starts U2 by hand holds U2."""
    await plan(bus, project, {"S1": ["U1", "U2"]})
    reports = [
        claim(project, "U1", "started", actor=B1),
        claim(project, "U1", "started", actor=MALLORY),  # refused: already started
        claim(project, "U1", "commit", actor=MALLORY, sha=SHA_A),  # refused: not the holder
        claim(project, "U2", "started", actor=OPERATOR),
    ]
    async with units_daemon(nats_url, project):
        for report in reports:
            await bus.publish(report)
            await wait_log(bus, project, answered(report))
    units = await holders(bus, project)
    assert units["U1"].head is None  # mallory's commit was refused
    assert (units["U1"].holder, units["U2"].holder) == (B1, OPERATOR)
    assert units["U1"].started_event is not None


def _refusals(events: list[Event], report: UnitReport) -> list[FindingRaised]:
    return [
        e for e in events if isinstance(e, FindingRaised) and e.evidence.get("report") == report.id
    ]


FOREIGN = [
    pytest.param("commit", {"sha": SHA_B}, id="commit"),
    pytest.param("gave-up", {"why": "b2 would rather the unit failed"}, id="gave-up"),
    pytest.param("blocked", {"reason": "awaiting-capacity", "subject": "tokens"}, id="blocked"),
]


@pytest.mark.parametrize(("verb", "fields"), FOREIGN)
async def test_another_builder_cannot_report_for_the_unit_a_builder_holds(
    bus: Bus, nats_url: str, project: str, verb: str, fields: dict[str, str]
) -> None:
    """b2 commits, gives up or blocks on U1, which b1 holds: refused (``not-holder``, naming
    both), and U1 stays where b1 left it; b1's own commit still stands."""
    await plan(bus, project, {"S1": ["U1"]})
    started = claim(project, "U1", "started", actor=B1)
    foreign = claim(project, "U1", verb, actor=B2, **fields)
    own = claim(project, "U1", "commit", actor=B1, sha=SHA_A)
    async with units_daemon(nats_url, project):
        for report in (started, foreign, own):
            await bus.publish(report)
            events = await wait_log(bus, project, answered(report))
    [refusal] = _refusals(events, foreign)
    assert refusal.criterion == "not-holder"
    assert "builder:b1" in refusal.message and "builder:b2" in refusal.message
    assert not any(t.cause == foreign.id for t in transitions(events, "U1"))
    assert _refusals(events, own) == []
    last = transitions(events, "U1")[-1]
    assert (last.state, last.by, last.commit, last.cause) == ("working", "commit", SHA_A, own.id)
    units = await holders(bus, project)
    assert (units["U1"].state, units["U1"].head, units["U1"].holder) == ("working", SHA_A, B1)


async def test_a_builder_cannot_unblock_the_unit_another_holds(
    bus: Bus, nats_url: str, project: str
) -> None:
    """b1 blocks U1; b2's unblocked is refused and U1 stays blocked until b1 unblocks it."""
    await plan(bus, project, {"S1": ["U1"]})
    reports = [
        claim(project, "U1", "started", actor=B1),
        claim(project, "U1", "blocked", actor=B1, reason="awaiting-capacity", subject="capacity"),
        claim(project, "U1", "unblocked", actor=B2),
        claim(project, "U1", "unblocked", actor=B1),
    ]
    async with units_daemon(nats_url, project):
        for report in reports:
            await bus.publish(report)
            events = await wait_log(bus, project, answered(report))
    assert [r.criterion for r in _refusals(events, reports[2])] == ["not-holder"]
    assert [t.by for t in transitions(events, "U1")] == ["started", "blocked", "unblocked"]


async def test_an_operator_may_still_act_on_a_unit_a_builder_holds(
    bus: Bus, nats_url: str, project: str
) -> None:
    """The operator speaks for any unit: its block, unblock, commit and giving up on U1,
    which b1 holds, all stand."""
    await plan(bus, project, {"S1": ["U1"]})
    reports = [
        claim(project, "U1", "started", actor=B1),
        claim(
            project, "U1", "blocked", actor=OPERATOR, reason="awaiting-capacity", subject="capacity"
        ),
        claim(project, "U1", "unblocked", actor=OPERATOR),
        claim(project, "U1", "commit", actor=OPERATOR, sha=SHA_B),
        claim(project, "U1", "gave-up", actor=OPERATOR, why="the operator stops it"),
    ]
    async with units_daemon(nats_url, project):
        for report in reports:
            await bus.publish(report)
            events = await wait_log(bus, project, answered(report))
    assert all(_refusals(events, r) == [] for r in reports)
    moves = transitions(events, "U1")
    assert [t.by for t in moves] == ["started", "blocked", "unblocked", "commit", "gave-up"]
    assert moves[-1].state == "failed"
