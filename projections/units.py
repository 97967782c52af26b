"""The ``units`` projection: every planned unit, where its latest transition left it, and
what it has waited on.

A unit that is planned but not yet dispatched has ``state = None``; once it moves it is
always in exactly one of working, blocked, done, failed, lost. Readiness is a flag on a
working unit and is never DONE.

Besides each unit's state the projection keeps:

* time in wait, per reason, from each block to whatever ended it (``waited_s`` on a unit,
  summed per slice in ``UnitsState.waited_s``), plus the block still open on a unit;
* the claims (reports) not answered yet, per unit (``UnitsState.claims``). An answer
  (a transition whose ``cause`` is the report, or a refusal finding whose evidence names
  it) removes the claim, so a restarted units daemon answers exactly what is left and
  never answers a report twice. The state stays bounded by the claims outstanding, not
  by the number of reports ever made;
* the wait-budget finding raised for the current block, so the watchdog raises it once;
* who holds the unit's round: the claimant whose ``started`` report the system accepted
  (``holder``). Only its heartbeats keep the unit alive; the watchdog names any other
  beater in one finding per beater, which the projection remembers (``foreign_beats``).
"""

from datetime import UTC, datetime
from typing import Final

import msgspec

from projections.base import Fold
from schemas import (
    Actor,
    Block,
    Event,
    FindingRaised,
    Outcome,
    UnitPlanned,
    UnitState,
    UnitTransitioned,
)
from schemas.authority import FORGERY_CLASS
from schemas.authority import REFUSAL_CLASS as REFUSAL_CLASS
from schemas.reports import (
    BlockedReport,
    CommitReport,
    GaveUpReport,
    StartedReport,
    UnblockedReport,
    UnitReport,
)
from schemas.slices import SlicePlanAccepted, UnitDispatched
from schemas.units import TransitionBy

CONTRACT_CLASS: Final = "contract-unmet"
"""The finding class of a suite that passed without the unit's criteria; ``evidence["suite"]``."""

WAIT_BUDGET_CLASS: Final = "wait-budget"
"""The finding class of a block past its budget; ``evidence["block"]`` is the block's id."""

FOREIGN_BEAT_CLASS: Final = FORGERY_CLASS
FOREIGN_BEAT_CRITERION: Final = "heartbeat-not-holder"
"""A heartbeat for a unit from anyone but its holder: the watchdog's ``forgery`` finding
with this criterion; ``evidence["unit"]`` and ``evidence["beater"]`` (``role:principal``)."""


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
    by: TransitionBy | None = None
    """What warranted the latest transition."""
    started: bool = False
    """It has been working at least once (a hold of a never-started unit is not a pause)."""
    held: bool = False
    """The current block is the dispatcher's hold on a unit that has not started."""
    dispatched: int = 0
    """How many times the dispatcher dispatched it (``UnitDispatched``)."""
    head: str | None = None
    """The last commit it submitted that the system accepted."""
    gated_by: str | None = None
    """The gate suite that last set or cleared its ready flag (each suite counts once)."""
    asked: str | None = None
    """The id of its latest ``commit`` transition: the ask only the system's suite answers."""
    contract_noted: str | None = None
    """The suite a contract-unmet finding was raised for (raised once per suite)."""
    block_id: str | None = None
    """Id of the transition that opened the current block (a block's identity)."""
    blocked_since: datetime | None = None
    """When the current block opened."""
    wait_finding: str | None = None
    """The wait-budget finding raised for the current block, once raised."""
    holder: Actor | None = None
    """Who holds its round: the actor of the started report the system last accepted for it
    (the builder principal; an operator when an operator started it by hand). A claim's
    actor is proven by its subject, so nobody can take the round by saying so."""
    started_event: str | None = None
    """Id of the transition that last started it (what gave it its holder)."""
    foreign_beats: list[str] = []
    """``role:principal`` of every beater other than the holder already named in a finding."""
    waited_s: dict[str, float] = {}
    """Closed waits, seconds per reason."""


class UnitsState(msgspec.Struct):
    """Units by id in the order they were planned; claims awaiting an answer; waits."""

    units: dict[str, UnitView] = {}
    claims: dict[str, list[UnitReport]] = {}
    """Reports not answered yet, per unit id (planned or not), in log order."""
    waited_s: dict[str, dict[str, float]] = {}
    """Closed waits per slice, then per reason, in seconds."""
    governed: list[str] = []
    """Slices whose plan the dispatcher accepted: their units start only once dispatched."""
    answers: dict[str, int] = {}
    """How many times each report id has been answered. The log can hold a report twice
    (a re-stored copy carries the same id), and each occurrence needs its own answer: the
    daemon salts the answer id with this count (:func:`occurrence`), so the second answer
    is not de-duplicated away as the first one's repeat."""


def initial() -> UnitsState:
    return UnitsState()


def apply(state: UnitsState, event: Event) -> UnitsState:
    match event:
        case UnitPlanned():
            _planned(state, event)
        case UnitTransitioned():
            _transitioned(state, event)
        case (
            StartedReport() | BlockedReport() | UnblockedReport() | CommitReport() | GaveUpReport()
        ):
            state.claims.setdefault(event.unit, []).append(event)
        case FindingRaised():
            _finding(state, event)
        case UnitDispatched():
            dispatched = state.units.get(event.unit)
            if dispatched is not None:
                dispatched.dispatched += 1
        case SlicePlanAccepted():
            if event.plan.slice not in state.governed:
                state.governed.append(event.plan.slice)
        case _:
            pass
    return state


def _planned(state: UnitsState, event: UnitPlanned) -> None:
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
        for name in _HISTORY:
            setattr(view, name, getattr(existing, name))
    view.last_event = event.id
    state.units[event.unit] = view


_HISTORY = (
    "state",
    "ready",
    "block",
    "outcome",
    "since",
    "transitions",
    "by",
    "started",
    "held",
    "dispatched",
    "head",
    "gated_by",
    "asked",
    "contract_noted",
    "block_id",
    "blocked_since",
    "wait_finding",
    "waited_s",
    "holder",
    "started_event",
    "foreign_beats",
)


def _transitioned(state: UnitsState, event: UnitTransitioned) -> None:
    view = state.units.get(event.unit)
    if view is None:  # transitions for an unplanned unit still show up, never vanish
        view = state.units[event.unit] = UnitView(unit=event.unit, slice="")
    same_block = event.state == "blocked" and view.state == "blocked" and view.block == event.block
    if view.state == "blocked" and view.block is not None and not same_block:
        opened = view.blocked_since or view.since or event.at
        _close_wait(state, view, view.block.reason, (event.at - opened).total_seconds())
    if event.state != "blocked":
        view.block_id = view.blocked_since = view.wait_finding = None
    elif not same_block:  # a new block (a re-hold naming another subject is a new one too)
        view.block_id, view.blocked_since, view.wait_finding = event.id, event.at, None
    view.held = event.state == "blocked" and event.by == "hold"
    if event.state == "working":
        view.started = True
    if event.commit is not None:
        view.head = event.commit
    if event.by == "gates":
        view.gated_by = event.cause
    if event.by == "commit":
        view.asked = event.id
    view.state = event.state
    view.ready = event.ready
    view.block = event.block
    view.outcome = event.outcome
    view.since = event.at
    view.by = event.by
    view.transitions += 1
    view.last_event = event.id
    if event.cause is not None:
        claim = _answer(state, event.unit, event.cause)
        if event.by == "started" and claim is not None:
            # Only a started report the system accepted makes a holder: a refused one (the
            # unit already started, not dispatched) answers with a finding, never here.
            view.holder, view.started_event = claim.actor, event.id


def _close_wait(state: UnitsState, view: UnitView, reason: str, seconds: float) -> None:
    seconds = max(seconds, 0.0)
    view.waited_s[reason] = view.waited_s.get(reason, 0.0) + seconds
    per_slice = state.waited_s.setdefault(view.slice, {})
    per_slice[reason] = per_slice.get(reason, 0.0) + seconds


def _finding(state: UnitsState, event: FindingRaised) -> None:
    if event.cls == REFUSAL_CLASS:
        report = event.evidence.get("report")
        if isinstance(report, str):
            for unit in ([event.unit] if event.unit else []) + list(state.claims):
                if _answer(state, unit, report) is not None:
                    break
    elif event.cls == CONTRACT_CLASS and event.unit is not None:
        view = state.units.get(event.unit)
        suite = event.evidence.get("suite")
        if view is not None and isinstance(suite, str):
            view.contract_noted = suite
    elif event.cls == WAIT_BUDGET_CLASS and event.unit is not None:
        view = state.units.get(event.unit)
        block = event.evidence.get("block")
        if view is not None and block is not None and block == view.block_id:
            view.wait_finding = event.id
    elif event.cls == FOREIGN_BEAT_CLASS and event.criterion == FOREIGN_BEAT_CRITERION:
        # Only the system raises a forgery finding (any other is itself a forgery, which no
        # fold applies), so nobody can silence the watchdog by pre-filling this list.
        beaten, beater = event.evidence.get("unit"), event.evidence.get("beater")
        view = state.units.get(beaten) if isinstance(beaten, str) else None
        if view is not None and isinstance(beater, str) and beater not in view.foreign_beats:
            view.foreign_beats.append(beater)


def _answer(state: UnitsState, unit: str, report_id: str) -> UnitReport | None:
    """Drop the claim ``report_id`` of ``unit`` if it is outstanding; the claim when it was."""
    pending = state.claims.get(unit)
    if not pending:
        return None
    for index, claim in enumerate(pending):
        if claim.id == report_id:
            del pending[index]
            if not pending:
                del state.claims[unit]
            state.answers[report_id] = state.answers.get(report_id, 0) + 1
            return claim
    return None


def occurrence(state: UnitsState, report_id: str) -> int:
    """Which occurrence of ``report_id`` the oldest pending copy is (0: its first)."""
    return state.answers.get(report_id, 0)


FOLD = Fold(name="units", state_type=UnitsState, initial=initial, apply=apply)


# -- queries ----------------------------------------------------------------------------


def by_state(state: UnitsState) -> dict[str, list[UnitView]]:
    """Units grouped by state name (``planned`` for those not dispatched yet)."""
    groups: dict[str, list[UnitView]] = {}
    for view in state.units.values():
        groups.setdefault(view.state or "planned", []).append(view)
    return groups


def waiting_on(state: UnitsState) -> dict[str, list[UnitView]]:
    """Blocked units grouped by ``reason:subject``: what this run is waiting on."""
    groups: dict[str, list[UnitView]] = {}
    for view in state.units.values():
        if view.state == "blocked" and view.block is not None:
            groups.setdefault(f"{view.block.reason}:{view.block.subject}", []).append(view)
    return groups


def outstanding_waits(state: UnitsState, slice_id: str | None = None) -> list[UnitView]:
    """Blocked units (of one slice, or all), longest-waiting first."""
    blocked = [
        v
        for v in state.units.values()
        if v.state == "blocked" and (slice_id is None or v.slice == slice_id)
    ]
    return sorted(blocked, key=lambda v: (v.blocked_since or v.since or _EPOCH, v.unit))


def waited(view: UnitView, now: datetime) -> float:
    """Seconds the unit has been in its current block at ``now`` (0 when not blocked)."""
    opened = view.blocked_since or view.since
    if view.state != "blocked" or opened is None:
        return 0.0
    return max((now - opened).total_seconds(), 0.0)


def time_in_wait(state: UnitsState, slice_id: str, now: datetime | None = None) -> dict[str, float]:
    """Seconds waited per reason in one slice: closed waits, plus open ones up to ``now``."""
    totals = dict(state.waited_s.get(slice_id, {}))
    if now is not None:
        for view in outstanding_waits(state, slice_id):
            if view.block is not None:
                reason = view.block.reason
                totals[reason] = totals.get(reason, 0.0) + waited(view, now)
    return totals


def pending_claims(state: UnitsState) -> list[UnitReport]:
    """Every claim not answered yet, oldest report id first within each unit."""
    return [claim for claims in state.claims.values() for claim in claims]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
