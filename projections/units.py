"""The ``units`` projection: every planned unit and where its latest transition left it.

A unit that is planned but not yet dispatched has ``state = None``; once dispatched it is
always in exactly one of working, blocked, done, failed, lost.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from projections.base import Fold
from schemas import (
    TERMINAL_STATES,
    Block,
    Event,
    Outcome,
    UnitPlanned,
    UnitState,
    UnitTransitioned,
)


class UnitView(msgspec.Struct, kw_only=True):
    """One unit as the log has it now."""

    unit: str
    slice: str
    title: str = ""
    files: list[str] = []
    blocked_by: list[str] = []
    criteria: list[str] = []
    state: UnitState | None = None
    ready: bool = False
    block: Block | None = None
    outcome: Outcome | None = None
    since: datetime | None = None
    transitions: int = 0
    last_event: str | None = None


class UnitsState(msgspec.Struct):
    """Units by id, in the order they were planned."""

    units: dict[str, UnitView] = {}


def initial() -> UnitsState:
    return UnitsState()


def apply(state: UnitsState, event: Event) -> UnitsState:
    match event:
        case UnitPlanned():
            existing = state.units.get(event.unit)
            view = UnitView(
                unit=event.unit,
                slice=event.slice,
                title=event.title,
                files=list(event.files),
                blocked_by=list(event.blocked_by),
                criteria=list(event.criteria),
            )
            if existing is not None:  # a re-plan keeps the unit's history
                view.state, view.ready, view.block = existing.state, existing.ready, existing.block
                view.outcome, view.since = existing.outcome, existing.since
                view.transitions = existing.transitions
            view.last_event = event.id
            state.units[event.unit] = view
        case UnitTransitioned():
            current = state.units.get(event.unit)
            if current is None:  # transitions for an unplanned unit still show up, never vanish
                current = UnitView(unit=event.unit, slice="")
                state.units[event.unit] = current
            view = current
            view.state = event.state
            view.ready = event.ready
            view.block = event.block
            view.outcome = event.outcome
            view.since = event.at
            view.transitions += 1
            view.last_event = event.id
        case _:
            pass
    return state


FOLD = Fold(name="units", state_type=UnitsState, initial=initial, apply=apply)


# -- queries ----------------------------------------------------------------------------


def by_state(state: UnitsState) -> dict[str, list[UnitView]]:
    """Units grouped by state name (``planned`` for those not dispatched yet)."""
    groups: dict[str, list[UnitView]] = {}
    for view in state.units.values():
        groups.setdefault(view.state or "planned", []).append(view)
    return groups


def is_terminal(view: UnitView) -> bool:
    return view.state in TERMINAL_STATES


def waiting_on(state: UnitsState) -> dict[str, list[UnitView]]:
    """Blocked units grouped by ``reason:subject``: what this run is waiting on."""
    groups: dict[str, list[UnitView]] = {}
    for view in state.units.values():
        if view.state == "blocked" and view.block is not None:
            groups.setdefault(f"{view.block.reason}:{view.block.subject}", []).append(view)
    return groups
