"""The ``decisions`` projection: every durable decision, the chain of supersession, and who
was briefed with each.

A decision is in force from the system's record of it (a ``decision.recorded`` fact) until
a later fact names it in ``supersedes``. An operator's record is a claim: it waits in
``pending`` until the ratchet daemon records it or refuses it. A dispatched unit is
*briefed with* every decision in force that bears on it (one of its files lies under one
of the decision's files, or it claims one of the decision's criteria) at the moment of its
dispatch; that list is what a ``decision-stale`` finding is routed to.
"""

from datetime import datetime

import msgspec

from projections.base import Fold
from schemas import Event, FindingRaised
from schemas.authority import ANSWERS_CLAIM as ANSWERS_CLAIM
from schemas.authority import refused_claim
from schemas.decisions import DecisionRecorded, ObjectiveDeclared
from schemas.slices import UnitDispatched
from schemas.targets import DecisionTarget


class Decision(msgspec.Struct, kw_only=True):
    """One decision in the system's record, and what became of it."""

    record: DecisionRecorded
    superseded_by: str | None = None
    briefed: list[str] = []
    """Units dispatched while it was in force and bearing on them."""
    slices: list[str] = []
    """The slices of those units."""


class Briefed(msgspec.Struct, kw_only=True):
    unit: str
    slice: str
    at: datetime


class DecisionsState(msgspec.Struct):
    decisions: dict[str, Decision] = {}
    objectives: dict[str, bool] = {}
    """Charter objective -> live."""
    pending: dict[str, DecisionRecorded] = {}
    """Operators' decision claims not answered yet (by a record or a refusal)."""
    raised: dict[str, str] = {}
    """The system's findings about decisions (id -> decision), so none is raised twice."""


def bears_on(record: DecisionRecorded, files: list[str], criteria: list[str]) -> bool:
    """True when a unit with ``files`` and ``criteria`` is work the decision bears on."""
    if set(record.criteria) & set(criteria):
        return True
    return any(_under(path, scope) for path in files for scope in record.files)


def _under(path: str, scope: str) -> bool:
    scope = scope.rstrip("/")
    return path == scope or path.startswith(scope + "/") or scope.startswith(path + "/")


def apply(state: DecisionsState, event: Event) -> DecisionsState:
    match event:
        case DecisionRecorded() if event.actor.role == "system":
            if event.id in state.decisions:
                return state
            state.decisions[event.id] = Decision(record=event)
            if event.supersedes in state.decisions:
                state.decisions[event.supersedes].superseded_by = event.id
            if event.claim is not None:
                state.pending.pop(event.claim, None)
        case DecisionRecorded():
            state.pending.setdefault(event.id, event)
        case ObjectiveDeclared():
            state.objectives[event.objective] = event.live
        case UnitDispatched():
            for decision in state.decisions.values():
                if decision.superseded_by is None and bears_on(
                    decision.record, event.files, event.criteria
                ):
                    if event.unit not in decision.briefed:
                        decision.briefed.append(event.unit)
                    if event.slice not in decision.slices:
                        decision.slices.append(event.slice)
        case FindingRaised() if event.actor.role == "system":
            claim = refused_claim(event)
            if claim is not None:
                state.pending.pop(claim, None)
            if isinstance(event.target, DecisionTarget):
                state.raised[event.id] = event.target.decision
    return state


FOLD = Fold(name="decisions", state_type=DecisionsState, initial=DecisionsState, apply=apply)


# -- queries ----------------------------------------------------------------------------


def in_force(state: DecisionsState) -> list[Decision]:
    """Decisions not superseded, oldest first."""
    return sorted(
        (d for d in state.decisions.values() if d.superseded_by is None),
        key=lambda d: d.record.id,
    )


def bearing_on(state: DecisionsState, files: list[str], criteria: list[str]) -> list[Decision]:
    """Decisions in force a unit with ``files`` and ``criteria`` is briefed with."""
    return [d for d in in_force(state) if bears_on(d.record, files, criteria)]


def chain(state: DecisionsState, decision_id: str) -> list[str]:
    """The supersession chain through ``decision_id``, first record first."""
    first = decision_id
    seen = {first}
    while (prior := _record(state, first)) is not None and prior.supersedes in state.decisions:
        first = prior.supersedes
        if first in seen:
            break
        seen.add(first)
    out = [first]
    while (found := state.decisions.get(out[-1])) is not None and found.superseded_by:
        if found.superseded_by in out:
            break
        out.append(found.superseded_by)
    return out


def _record(state: DecisionsState, decision_id: str) -> DecisionRecorded | None:
    found = state.decisions.get(decision_id)
    return found.record if found is not None else None


def serves_live(state: DecisionsState, record: DecisionRecorded) -> bool:
    """True when the decision cites a charter objective that is live."""
    return bool(record.serves) and state.objectives.get(record.serves, False)
