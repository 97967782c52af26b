"""The transition audit that runs after every daemon test can fail: a daemon that builds a
transition of its own, bypassing the one function, is caught."""

from __future__ import annotations

from kernelkit import daemon_violations

from bus import Bus, read
from projections.claims import hold, transition_event
from projections.units import FOLD as UNITS
from schemas import Actor, Block, UnitPlanned, UnitTransitioned, project_subjects

ROGUE = Actor(role="system", principal="rogue@host:1")
PLANNER = Actor(role="system", principal="tests")


async def test_a_transition_built_by_hand_is_caught(bus: Bus, project: str) -> None:
    """A daemon that publishes a hold it built itself (a prior that is not the unit's, no
    table check) makes the audit fail; the same hold built by claims.hold passes."""
    await bus.publish(UnitPlanned(project=project, actor=PLANNER, unit="U1", slice="S1"))
    await bus.publish(UnitPlanned(project=project, actor=PLANNER, unit="U2", slice="S1"))
    raw = UnitTransitioned(
        project=project,
        actor=ROGUE,
        unit="U2",
        state="blocked",
        prior="working",  # the rogue read the wrong fold: U2 never started
        block=Block(reason="awaiting-dependency", subject="U1"),
        by="hold",
    )
    await bus.publish(raw)
    events = [r.event async for r in read(bus, subjects=[project_subjects(project)]) if r.event]
    assert [v.event for v in daemon_violations(events)] == [raw.id]


async def test_a_transition_from_the_one_function_passes(bus: Bus, project: str) -> None:
    """The hold built through claims.hold and transition_event is what the table allows."""
    planned = [
        UnitPlanned(project=project, actor=PLANNER, unit=u, slice="S1") for u in ("U1", "U2")
    ]
    for event in planned:
        await bus.publish(event)
    state = UNITS.fold(planned)
    move = hold(state, state.units["U2"], "U1", None)
    fact = transition_event(move, project, ROGUE, planned[1].id)  # type: ignore[arg-type]
    await bus.publish(fact)
    events = [r.event async for r in read(bus, subjects=[project_subjects(project)]) if r.event]
    assert daemon_violations(events) == []
