"""The ``blocking`` projection: ``blocked-by-fact`` findings, where they went, what answers them.

A ``blocked-by-fact`` finding says a fact a plan or a decision rests on is false. It names
``plan:<slice>`` (optionally one unit of it as the item) or ``decision:<id>``. While it is
open the units it reaches are not dispatched. It is answered by a new plan accepted for
the slice it names (a plan target) or by a decision superseding the one it names (a
decision target); the dispatcher then resolves it. A finding resolved or dismissed any
other way stops blocking too.
"""

from datetime import datetime

import msgspec

from projections.base import Fold
from projections.decisions import DecisionsState, bears_on
from projections.slices import SlicesState
from schemas import Event, FindingRaised, FindingResolved
from schemas.decisions import BlockedRouted, DecisionRecorded
from schemas.lifecycle import FindingDismissed
from schemas.slices import SlicePlanAccepted
from schemas.targets import DecisionTarget, PlanTarget

BLOCKED = "blocked-by-fact"


class Blocked(msgspec.Struct, kw_only=True):
    """One ``blocked-by-fact`` finding about a plan or a decision."""

    finding: str
    at: datetime
    message: str
    by: str
    slice: str | None = None
    item: str = ""
    decision: str | None = None
    routed: bool = False
    reached: list[str] = []
    answered_by: str | None = None
    """The plan acceptance or the superseding decision that answers it."""
    closed: bool = False
    """Resolved (by the dispatcher once answered, or otherwise) or dismissed."""

    @property
    def blocking(self) -> bool:
        return not self.closed and self.answered_by is None


class BlockingState(msgspec.Struct):
    findings: dict[str, Blocked] = {}
    superseded: dict[str, str] = {}
    """Decision -> the decision fact that superseded it."""


def apply(state: BlockingState, event: Event) -> BlockingState:
    match event:
        case FindingRaised(cls="blocked-by-fact") if event.id not in state.findings:
            _raised(state, event)
        case SlicePlanAccepted():
            for found in state.findings.values():
                if found.slice == event.plan.slice and found.answered_by is None:
                    found.answered_by = event.id
        case DecisionRecorded(supersedes=str(old)) if event.actor.role == "system":
            state.superseded.setdefault(old, event.id)
            for found in state.findings.values():
                if found.decision == old and found.answered_by is None:
                    found.answered_by = event.id
        case BlockedRouted():
            routed = state.findings.get(event.finding)
            if routed is not None:
                routed.routed, routed.reached = True, list(event.reached)
        case FindingResolved() | FindingDismissed():
            closed = state.findings.get(event.finding)
            if closed is not None:
                closed.closed = True
    return state


def _raised(state: BlockingState, event: FindingRaised) -> None:
    found = Blocked(
        finding=event.id,
        at=event.at,
        message=event.message,
        by=f"{event.actor.role}:{event.actor.principal}",
    )
    match event.target:
        case PlanTarget(slice=slice_id, item=item):
            found.slice, found.item = slice_id, item
        case DecisionTarget(decision=decision):
            found.decision = decision
            found.answered_by = state.superseded.get(decision)
        case _:
            return  # a blocked-by-fact about anything else names nothing to hold
    state.findings[event.id] = found


FOLD = Fold(name="blocking", state_type=BlockingState, initial=BlockingState, apply=apply)


# -- queries ----------------------------------------------------------------------------


def reached(found: Blocked, slices: SlicesState, decisions: DecisionsState) -> list[str]:
    """The units a finding reaches: the slice's (or its one item), or every planned unit
    of an open slice that the decision bears on."""
    if found.slice is not None:
        view = slices.slices.get(found.slice)
        if view is None:
            return []
        if found.item in view.units:
            return [found.item]
        return list(view.order)
    decision = decisions.decisions.get(found.decision or "")
    if decision is None:
        return []
    return [
        unit_id
        for view in sorted(slices.slices.values(), key=lambda v: v.rank)
        if view.status == "open"
        for unit_id in view.order
        if bears_on(decision.record, view.units[unit_id].files, view.units[unit_id].criteria)
    ]


def open_blocks(state: BlockingState) -> list[Blocked]:
    """Findings still blocking, oldest first."""
    return sorted((f for f in state.findings.values() if f.blocking), key=lambda f: f.finding)


def stopped(state: BlockingState, slices: SlicesState, decisions: DecisionsState) -> set[str]:
    """Units not to be dispatched: every unit an open finding reaches."""
    return {unit for found in open_blocks(state) for unit in reached(found, slices, decisions)}


def to_route(state: BlockingState) -> list[Blocked]:
    return [f for f in open_blocks(state) if not f.routed]


def to_resolve(state: BlockingState) -> list[Blocked]:
    """Answered findings not closed yet, oldest first."""
    return sorted(
        (f for f in state.findings.values() if f.answered_by and not f.closed),
        key=lambda f: f.finding,
    )
