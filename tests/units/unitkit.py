"""Helpers for the units tests: plan units, make claims, run the real daemons in-process,
and wait on the log (bounded, never by sleeping)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest
from kernelkit import running
from logkit import log_events, wait_log  # noqa: F401 - re-exported for the tests

from bus import Bus, connect
from projections import units as units_fold
from schemas import Actor, Event, UnitPlanned, UnitTransitioned
from schemas.reports import (
    BlockedReport,
    CommitReport,
    GaveUpReport,
    StartedReport,
    UnblockedReport,
    UnitReport,
)
from workers.kernel import Kernel
from workers.units.daemon import Units

BUILDER = Actor(role="builder", principal="test-builder")
SHA_A = "a" * 40
SHA_B = "b" * 40


async def plan(bus: Bus, project: str, slices: dict[str, Sequence[str]]) -> None:
    """Publish a ``UnitPlanned`` for every unit, by slice."""
    system = Actor(role="system", principal="test-planner")
    for slice_id, units in slices.items():
        for unit in units:
            await bus.publish(UnitPlanned(project=project, actor=system, unit=unit, slice=slice_id))


def claim(project: str, unit: str, verb: str, **fields: Any) -> UnitReport:
    """One report as a builder (``actor=`` overrides)."""
    actor = fields.pop("actor", BUILDER)
    kinds: dict[str, Any] = {
        "started": StartedReport,
        "blocked": BlockedReport,
        "unblocked": UnblockedReport,
        "commit": CommitReport,
        "gave-up": GaveUpReport,
    }
    report: UnitReport = kinds[verb](project=project, actor=actor, unit=unit, **fields)
    return report


def answered(report: UnitReport) -> Callable[[list[Event]], bool]:
    """True once the log carries an answer to ``report`` (a transition or a refusal)."""

    def check(events: list[Event]) -> bool:
        return any(answer_of(e, report) for e in events)

    return check


def answer_of(event: Event, report: UnitReport) -> bool:
    if isinstance(event, UnitTransitioned):
        return event.cause == report.id
    return getattr(event, "evidence", {}).get("report") == report.id


def all_answered(reports: Sequence[UnitReport]) -> Callable[[list[Event]], bool]:
    """True once every one of ``reports`` is on the log and none is still unanswered."""
    wanted = {r.id for r in reports}

    def check(events: list[Event]) -> bool:
        seen = {e.id for e in events} >= wanted
        return seen and not units_fold.FOLD.fold(events).claims

    return check


def transitions(events: list[Event], unit: str | None = None) -> list[UnitTransitioned]:
    return [
        e for e in events if isinstance(e, UnitTransitioned) and (unit is None or e.unit == unit)
    ]


@contextlib.asynccontextmanager
async def units_daemon(url: str, project: str, **kwargs: Any) -> AsyncIterator[Kernel]:
    """The real units daemon, on its own connection, serving only ``project``."""
    connection = await connect(url, name="units-under-test")
    try:
        async with running(connection, Units(projects=[project], **kwargs)) as kernel:
            yield kernel
    finally:
        await connection.close()


@pytest.fixture
def builder() -> Actor:
    return BUILDER
