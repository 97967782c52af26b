"""Who holds a unit's round: the claimant whose started report the system accepted, and
nobody who merely says so (a refused start, a later claim by another principal)."""

from __future__ import annotations

from unitkit import SHA_A, answered, claim, log_events, plan, units_daemon, wait_log

from bus import Bus
from projections import units as units_fold
from schemas import Actor

B1 = Actor(role="builder", principal="b1")
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
    """b1's accepted start makes it U1's holder; mallory's refused start and its accepted
    commit on U1 do not take the round. An operator who starts U2 by hand holds U2."""
    await plan(bus, project, {"S1": ["U1", "U2"]})
    reports = [
        claim(project, "U1", "started", actor=B1),
        claim(project, "U1", "started", actor=MALLORY),  # refused: already started
        claim(project, "U1", "commit", actor=MALLORY, sha=SHA_A),  # accepted, a claim only
        claim(project, "U2", "started", actor=OPERATOR),
    ]
    async with units_daemon(nats_url, project):
        for report in reports:
            await bus.publish(report)
            await wait_log(bus, project, answered(report))
    units = await holders(bus, project)
    assert units["U1"].head == SHA_A  # mallory's commit was taken as a claim
    assert (units["U1"].holder, units["U2"].holder) == (B1, OPERATOR)
    assert units["U1"].started_event is not None
