"""The ``slices`` projection: accepted plans as DAGs, where each run stands, and the record.

Per slice it keeps the plan, its waves and dispatch order (from
:mod:`projections.planning`),
every unit's latest state, its dispatches and their completions, and the run record
(:func:`record_entries`). What is settled and what the dispatcher does next are the dispatch
rules over this state (:mod:`projections.slice_dispatch`).

Gate outcomes enter the run record only as facts: a ``GateResultRecorded`` or
``GateSuiteCompleted`` is folded when the ``gates`` projection would accept it — published
by the system and signed by a registered runner key whose signature verifies
(:func:`projections.gates.judge`, applied to the key registrations seen so far in log
order). An unsigned or forged outcome is not shown as a command that ran.

A dispatched unit that failed in a way a retry may answer (:data:`RETRYABLE_ENDINGS`: the
builder gave up, the progress test stopped it) *awaits its retry* until the dispatcher
answers the failure (``unit.retry_decided.v1``): refused, the unit is settled; granted, it
goes on awaiting until the dispatcher moves it back to work (``retried``). While it
awaits, it holds its capacity, its dependents are not held, its run-record entry is not
completed and its slice does not close.
"""

from datetime import datetime
from typing import Literal

import msgspec

from projections import gates, pacing, slice_asks
from projections.base import Fold
from projections.planning import schedule
from projections.slice_asks import Misaligned, Submission
from schemas import (
    TERMINAL_STATES,
    Block,
    Event,
    FindingRaised,
    FindingResolved,
    UnitPlanned,
    UnitState,
    UnitTransitioned,
)
from schemas.gates import GateResultRecorded, GateRunnerKeyRegistered, GateSuiteCompleted
from schemas.lifecycle import FindingDismissed
from schemas.reports import StartedReport
from schemas.reviews import ReviewRequested, VerdictAccepted
from schemas.slices import (
    BootResult,
    CommandRun,
    MisalignmentRouted,
    PlanSubmission,
    RetryDecided,
    RunEntryCompleted,
    SliceClosed,
    SlicePlan,
    SlicePlanAccepted,
    SlicePlanDiscarded,
    UnitDispatched,
    UsageReport,
)

RETRYABLE_ENDINGS = frozenset({"gave-up", "progress-test"})
"""What a FAILED unit's outcome names when a retry on the next rung may answer it: the
builder gave up (a ``failed`` envelope, or no valid envelope twice), or the progress test
stopped it at oversight ``full``. A halt (secret, security finding, frozen artifact, a
spent ladder, a decision asked again and again), the ceiling (the spend backstop) and LOST
(a runner that went silent) are never retried."""

RetryState = Literal["", "awaiting", "granted", "refused"]


class SliceUnit(msgspec.Struct, kw_only=True):
    """One unit of an accepted plan, as this slice sees it."""

    unit: str
    title: str = ""
    blocked_by: list[str] = []
    files: list[str] = []
    criteria: list[str] = []
    design_ref: str | None = None
    wave: int = 0
    sub_wave: int = 0
    position: int = 0
    state: UnitState | None = None
    ended_by: str = ""
    summary: str = ""
    block: Block | None = None
    since: datetime | None = None
    planned: bool = False
    dispatches: list[str] = []
    base: str | None = None  # trunk commit of the latest dispatch
    completed: list[str] = []
    # What happened since the latest dispatch, for the run record's completion:
    returned: int = 0  # builder reports other than "started" (it handed something back)
    commands: list[CommandRun] = []
    suite_errors: list[str] = []
    results: dict[str, str] = {}  # gate result id -> one-line detail, for this unit's head
    head: str | None = None
    """The unit's head as the units daemon's transitions name it (the commit it accepted from
    the builder; for a merge, the commit that merged): never a builder's claim, which any
    builder may publish, for any unit, whether or not the daemon accepted it."""
    reviews: int = 0
    last_event: str | None = None
    failure: str | None = None
    """The transition of its latest retryable failure (what a retry decision answers)."""
    retry: RetryState = ""
    """Where that failure's retry stands: ``awaiting`` the decision, ``granted`` (the move
    back to work is owed), ``refused``; ``""`` once it is working again."""
    retry_decision: str | None = None
    """The retry decision that answered ``failure``."""
    clock: pacing.UnitClock = msgspec.field(default_factory=pacing.UnitClock)
    """What its current attempt took in agents' and gates' time (:mod:`projections.pacing`)."""


def awaiting_retry(unit: SliceUnit) -> bool:
    """Failed, and a retry decision or the granted move back to work is still owed."""
    return unit.state == "failed" and unit.retry in ("awaiting", "granted")


class SliceView(msgspec.Struct, kw_only=True):
    """An accepted slice: its plan, schedule, units, and how it ended."""

    slice: str
    plan: SlicePlan
    accepted: str
    accepted_at: datetime
    rank: int
    status: Literal["open", "closed", "discarded"] = "open"
    order: list[str] = []
    waves: list[list[list[str]]] = []
    units: dict[str, SliceUnit] = {}
    boot: BootResult | None = None
    closed_at: datetime | None = None
    routes: list[str] = []
    resliced_by: str | None = None
    """The misaligned finding routed as a re-slice of this plan (which is then discarded)."""


class RecordEntry(msgspec.Struct, kw_only=True):
    """One entry of the run record: a unit's dispatch (the stub) and, later, its completion."""

    slice: str
    unit: str
    title: str
    attempt: int
    wave: int
    sub_wave: int
    dispatch: str
    dispatched_at: datetime
    completion: RunEntryCompleted | None = None
    retries: list[str] = []
    """Each retry decision on this dispatch, in words ("retried on rung 2 … because …",
    "not retried: …")."""


class SlicesState(msgspec.Struct, kw_only=True):
    slices: dict[str, SliceView] = {}
    unit_slice: dict[str, str] = {}
    submissions: dict[str, Submission] = {}
    record: list[RecordEntry] = []
    misaligned: dict[str, Misaligned] = {}
    refusals: dict[str, str] = {}
    """Refusal finding id -> the submission it refused."""
    accepted: int = 0
    runner_keys: gates.GatesState = msgspec.field(default_factory=gates.initial)
    """Runner key registrations only, folded by the gates projection's own rule."""
    pace: pacing.Pace = msgspec.field(default_factory=pacing.Pace)
    """Agents' and gates' time of the project's latest units (:mod:`projections.pacing`)."""


def initial() -> SlicesState:
    return SlicesState()


def apply(state: SlicesState, event: Event) -> SlicesState:
    match event:
        case PlanSubmission():
            slice_asks.submitted(state, event)
        case SlicePlanAccepted():
            _accept(state, event)
        case UnitDispatched():
            _dispatched(state, event)
        case UnitTransitioned():
            _transitioned(state, event)
        case RunEntryCompleted():
            _completed(state, event)
        case RetryDecided():
            _retry_decided(state, event)
        case SliceClosed():
            view = state.slices.get(event.slice)
            if view is not None:
                view.status, view.boot, view.closed_at = "closed", event.boot, event.at
        case SlicePlanDiscarded():
            view = state.slices.get(event.slice)
            if view is not None:
                view.status = "discarded"
        case MisalignmentRouted():
            found = state.misaligned.get(event.finding)
            if found is not None:
                found.route = event.route
            view = state.slices.get(event.slice)
            if view is not None:
                view.routes.append(event.route)
                if event.route == "re-slice":
                    view.resliced_by = event.finding
        case FindingRaised():
            slice_asks.finding(state, event)
        case FindingResolved() | FindingDismissed():
            slice_asks.finding_closed(state, event.finding)
        case UnitPlanned():
            unit = _unit(state, event.unit)
            if unit is not None and state.unit_slice.get(event.unit) == event.slice:
                unit.planned = True
        case GateRunnerKeyRegistered():
            gates.apply(state.runner_keys, event)
        case GateResultRecorded():
            if gates.judge(state.runner_keys, event) is None:
                _gate_result(state, event)
        case GateSuiteCompleted():
            if gates.judge(state.runner_keys, event) is None:
                _gate_suite(state, event)
        case VerdictAccepted():
            unit = _unit(state, event.unit)
            if unit is not None and unit.dispatches:
                unit.reviews += 1
                pacing.review_answered(unit.clock, event.at)
        case ReviewRequested():
            unit = _unit(state, event.unit)
            if unit is not None and unit.dispatches:
                pacing.review_asked(unit.clock, event.at)
        case _:
            _claim(state, event)
    return state


def _accept(state: SlicesState, event: SlicePlanAccepted) -> None:
    plan = event.plan
    slice_asks.accepted(state, event)
    sched = schedule(plan)
    where = sched.position()
    view = SliceView(
        slice=plan.slice,
        plan=plan,
        accepted=event.id,
        accepted_at=event.at,
        rank=state.accepted,
        order=sched.order,
        waves=sched.waves,
    )
    for unit in plan.units:
        wave, sub_wave, position = where[unit.id]
        view.units[unit.id] = SliceUnit(
            unit=unit.id,
            title=unit.title,
            blocked_by=list(unit.blocked_by),
            files=list(unit.files),
            criteria=list(unit.criteria),
            design_ref=unit.design_ref,
            wave=wave,
            sub_wave=sub_wave,
            position=position,
        )
        state.unit_slice[unit.id] = plan.slice
    state.slices[plan.slice] = view
    state.accepted += 1


def _unit(state: SlicesState, unit_id: str) -> SliceUnit | None:
    slice_id = state.unit_slice.get(unit_id)
    view = state.slices.get(slice_id) if slice_id is not None else None
    return view.units.get(unit_id) if view is not None else None


def _dispatched(state: SlicesState, event: UnitDispatched) -> None:
    unit = _unit(state, event.unit)
    if unit is None:
        return
    unit.dispatches.append(event.id)
    unit.base = event.base
    unit.returned = 0
    unit.commands, unit.suite_errors, unit.results = [], [], {}
    unit.head = None
    unit.reviews = 0
    pacing.started(unit.clock, event.at)
    state.record.append(
        RecordEntry(
            slice=event.slice,
            unit=event.unit,
            title=event.title,
            attempt=event.attempt,
            wave=event.wave,
            sub_wave=event.sub_wave,
            dispatch=event.id,
            dispatched_at=event.at,
        )
    )


def _transitioned(state: SlicesState, event: UnitTransitioned) -> None:
    unit = _unit(state, event.unit)
    if unit is None:
        return
    unit.state = event.state
    unit.block = event.block
    unit.since = event.at
    unit.ended_by = event.outcome.ended_by if event.outcome is not None else ""
    unit.summary = event.outcome.summary if event.outcome is not None else ""
    unit.last_event = event.id
    if event.commit and unit.dispatches:
        unit.head = event.commit
    if event.by == "commit":
        pacing.committed(unit.clock, event.at)
    elif event.by == "retried":
        pacing.started(unit.clock, event.at)
    elif event.state == "done":
        pacing.done(state.pace, unit.clock)
    if event.state != "failed":
        unit.retry = ""
    elif unit.dispatches and unit.ended_by in RETRYABLE_ENDINGS:
        unit.failure, unit.retry, unit.retry_decision = event.id, "awaiting", None


def _retry_decided(state: SlicesState, event: RetryDecided) -> None:
    unit = _unit(state, event.unit)
    if unit is None or event.failure != unit.failure or unit.retry != "awaiting":
        return  # a decision on an older failure, or a repeat
    unit.retry = "granted" if event.retry else "refused"
    unit.retry_decision = event.id
    for entry in reversed(state.record):
        if entry.unit == event.unit and unit.dispatches and entry.dispatch == unit.dispatches[-1]:
            entry.retries.append(retry_words(event))
            break


def retry_words(event: RetryDecided) -> str:
    """A retry decision in one line, as the record shows it."""
    if event.retry:
        return f"retried on rung {event.to_rung} because {event.why}"
    return f"not retried: {event.why}"


def _completed(state: SlicesState, event: RunEntryCompleted) -> None:
    unit = _unit(state, event.unit)
    if unit is not None and event.dispatch not in unit.completed:
        unit.completed.append(event.dispatch)
    for entry in state.record:
        if entry.dispatch == event.dispatch and entry.completion is None:
            entry.completion = event
            break


def _claim(state: SlicesState, event: Event) -> None:
    """A builder's report about a dispatched unit, other than "started" or token usage,
    is the unit handing something back."""
    unit_id = getattr(event, "unit", None)
    if not isinstance(unit_id, str) or event.actor.role != "builder":
        return
    if isinstance(event, StartedReport | UsageReport):
        return
    unit = _unit(state, unit_id)
    if unit is not None and unit.dispatches:
        unit.returned += 1


def _gate_result(state: SlicesState, event: GateResultRecorded) -> None:
    """Keep a one-line detail of results on a live unit's head, for its suite entries."""
    if event.commit is None:
        return
    for view in state.slices.values():
        if view.status == "closed":
            continue
        for unit in view.units.values():
            if unit.head == event.commit and unit.state not in TERMINAL_STATES:
                unit.results[event.id] = result_detail(event)


def result_detail(event: GateResultRecorded) -> str:
    parts = [f"exit {event.exit_code}" if event.exit_code is not None else ""]
    parts.append(event.error or event.summary)
    return "; ".join(p for p in parts if p)


def _gate_suite(state: SlicesState, event: GateSuiteCompleted) -> None:
    if event.unit is None:
        return
    unit = _unit(state, event.unit)
    if unit is None or not unit.dispatches:
        return
    pacing.gated(unit.clock, event.duration_s)
    if event.error:
        unit.suite_errors.append(f"{(event.commit or '?')[:12]}: {event.error}")
    for entry in event.checks:
        unit.commands.append(
            CommandRun(
                check=entry.check,
                command=entry.check,
                outcome=entry.outcome,
                duration_s=entry.duration_s,
                cached=entry.cached,
                tree=event.tree or "",
                commit=event.commit or "",
                detail=unit.results.get(entry.result, "")
                or (f"cached result {entry.result}" if entry.cached else ""),
            )
        )


FOLD = Fold(name="slices", state_type=SlicesState, initial=initial, apply=apply)


def record_entries(state: SlicesState, slice_id: str | None = None) -> list[RecordEntry]:
    """The run record: one entry per unit per dispatch, in dispatch order."""
    return [e for e in state.record if slice_id is None or e.slice == slice_id]


def pending_discards(state: SlicesState) -> list[SliceView]:
    """Slices routed as a re-slice whose plan is not discarded yet, in acceptance order."""
    return sorted(
        (v for v in state.slices.values() if v.resliced_by is not None and v.status != "discarded"),
        key=lambda v: v.rank,
    )


def units_reached(state: SlicesState, criteria: list[str], slice_id: str | None) -> list[str]:
    """Units whose claimed criteria include any named: of ``slice_id`` when it names an
    accepted slice, else of every slice."""
    wanted = set(criteria)
    views = [state.slices[slice_id]] if slice_id in state.slices else list(state.slices.values())
    return [
        unit_id
        for view in sorted(views, key=lambda v: v.rank)
        for unit_id in view.order
        if wanted & set(view.units[unit_id].criteria)
    ]


def view_of(state: SlicesState, unit_id: str) -> SliceView | None:
    slice_id = state.unit_slice.get(unit_id)
    return state.slices.get(slice_id) if slice_id is not None else None
