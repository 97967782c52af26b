"""Event generators and a private projector for projector tests."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable

import pytest_asyncio
from hypothesis import strategies as st
from nats.js.api import KeyValueConfig

from bus import Bus, Views
from bus.provision import VIEW_HISTORY
from schemas import (
    Actor,
    Block,
    Event,
    FindingRaised,
    FindingResolved,
    Outcome,
    UnitPlanned,
    UnitTransitioned,
    parse_target,
)

SYSTEM = Actor(role="system", principal="tests")
REVIEWER = Actor(role="reviewer", principal="r1")
UNITS = ["U1", "U2", "U3"]
_bucket_counter = itertools.count()


def planned(project: str, unit: str) -> UnitPlanned:
    return UnitPlanned(project=project, actor=SYSTEM, unit=unit, slice="S1", title=f"t-{unit}")


def transition(project: str, unit: str, state: str) -> UnitTransitioned:
    block = Block(reason="awaiting-gate", subject="tests") if state == "blocked" else None
    outcome = (
        Outcome(summary=state, ended_by="report") if state in ("done", "failed", "lost") else None
    )
    return UnitTransitioned(
        project=project,
        actor=SYSTEM,
        unit=unit,
        state=state,  # type: ignore[arg-type]
        block=block,
        outcome=outcome,
    )


def finding(project: str, unit: str | None, line: int, severity: str) -> FindingRaised:
    return FindingRaised(
        project=project,
        actor=REVIEWER,
        producer="reviewer",
        target=parse_target(f"code:src/m.py:{line}-{line + 1}"),
        severity=severity,  # type: ignore[arg-type]
        criterion="C1",
        message=f"line {line}",
        unit=unit,
    )


@st.composite
def event_sequences(draw: st.DrawFn, project: str) -> list[Event]:
    """A plausible mixed history: plans, transitions, findings (some repeated), resolutions."""
    events: list[Event] = [planned(project, draw(st.sampled_from(UNITS)))]
    raised: list[str] = []
    steps = draw(st.lists(st.integers(0, 5), min_size=1, max_size=40))
    for step in steps:
        unit = draw(st.sampled_from(UNITS))
        if step == 0:
            events.append(planned(project, unit))
        elif step in (1, 2):
            state = draw(st.sampled_from(["working", "blocked", "done", "failed", "lost"]))
            events.append(transition(project, unit, state))
        elif step in (3, 4):
            scope = draw(st.sampled_from([unit, None]))
            event = finding(
                project, scope, draw(st.integers(1, 4)), draw(st.sampled_from(["low", "high"]))
            )
            raised.append(event.id)
            events.append(event)
        elif raised:
            target = draw(st.sampled_from(raised))
            events.append(
                FindingResolved(project=project, actor=SYSTEM, finding=target, why="fixed")
            )
    return events


@pytest_asyncio.fixture(loop_scope="session")
async def private_kv(bus: Bus) -> AsyncIterator[Callable[[], Views]]:
    """Fresh view buckets for an in-process projector, so tests never share a checkpoint."""
    created: list[str] = []

    async def make() -> Views:
        name = f"test_projections_{next(_bucket_counter)}"
        created.append(name)
        await bus.js.create_key_value(KeyValueConfig(bucket=name, history=VIEW_HISTORY))
        return Views(bus, await bus.bucket(name))

    yield make  # type: ignore[misc]
    for name in created:
        await bus.js.delete_key_value(name)
