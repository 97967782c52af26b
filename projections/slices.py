"""The ``slices`` projection: accepted plans as DAGs, where each run stands, and the record.

Per slice it keeps the plan, its waves and dispatch order (from
:mod:`projections.planning`),
every unit's latest state, its dispatches and their completions. The queries answer what
the dispatcher does next (:func:`next_actions`), what the run is waiting on
(:func:`waiting_on`), the current wave, and the run record (:func:`record_entries`).

Gate outcomes enter the run record only as facts: a ``GateResultRecorded`` or
``GateSuiteCompleted`` is folded when the ``gates`` projection would accept it — published
by the system and signed by a registered runner key whose signature verifies
(:func:`projections.gates.judge`, applied to the key registrations seen so far in log
order). An unsigned or forged outcome is not shown as a command that ran.

Settled means a unit will not move again in this slice: it is terminal (done, failed,
lost — a halt is a failure ended by ``halted``) and no retry is owed to it, or it was never
dispatched and one of its transitive blockers ended without being done. The TERMINAL
barrier waits for settled, never for success.

A dispatched unit that failed in a way a retry may answer (:data:`RETRYABLE_ENDINGS`: the
builder gave up, the progress test stopped it) *awaits its retry* until the dispatcher
answers the failure (``unit.retry_decided.v1``): refused, the unit is settled; granted, it
goes on awaiting until the dispatcher moves it back to work (``retried``). While it
awaits, it holds its capacity, its dependents are not held, its run-record entry is not
completed and its slice does not close.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import msgspec

from projections import gates
from projections.base import Fold
from projections.planning import schedule
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
from schemas.reports import CommitReport, StartedReport
from schemas.reviews import VerdictAccepted
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

REFUSAL_EVIDENCE_KEY = "submission"
"""A refusal finding names the submission it refuses under this evidence key."""

MISALIGNED_EVIDENCE_KEY = "misaligned"
"""A finding that refuses to route a misaligned finding names it under this key."""

FAILED_ENDINGS = frozenset({"failed", "lost"})

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
    reviews: int = 0
    last_event: str | None = None
    failure: str | None = None
    """The transition of its latest retryable failure (what a retry decision answers)."""
    retry: RetryState = ""
    """Where that failure's retry stands: ``awaiting`` the decision, ``granted`` (the move
    back to work is owed), ``refused``; ``""`` once it is working again."""
    retry_decision: str | None = None
    """The retry decision that answered ``failure``."""


def awaiting_retry(unit: SliceUnit) -> bool:
    """Failed, and a retry decision or the granted move back to work is still owed."""
    return unit.state == "failed" and unit.retry in ("awaiting", "granted")


class Submission(msgspec.Struct, kw_only=True):
    """A submitted plan and the answer it got (``pending`` until the system answers)."""

    id: str
    slice: str
    plan: SlicePlan
    at: datetime
    role: str = "planner"
    status: Literal["pending", "accepted", "refused"] = "pending"
    problems: list[str] = []
    refusal: str | None = None
    """The finding that refused it (``status`` refused)."""
    answered_by: str | None = None
    """A plan for the same slice accepted after the refusal: the refusal is moot."""
    refusal_closed: bool = False
    """The refusal finding was resolved or dismissed (by the dispatcher or anyone)."""


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


class Misaligned(msgspec.Struct, kw_only=True):
    """A ``misaligned`` finding, who raised it, and, once decided, where it was routed (or
    ``"refused"``). Only one raised by role ``operator`` as producer ``operator`` is routed;
    :func:`is_operators` tells."""

    finding: str
    slice: str | None
    criteria: list[str]
    at: datetime
    role: str = ""
    producer: str = ""
    route: str | None = None


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


def initial() -> SlicesState:
    return SlicesState()


def apply(state: SlicesState, event: Event) -> SlicesState:
    match event:
        case PlanSubmission():
            if event.id in state.submissions:  # a re-stored copy: already answered or queued
                return state
            state.submissions[event.id] = Submission(
                id=event.id,
                slice=event.plan.slice,
                plan=event.plan,
                at=event.at,
                role=event.actor.role,
            )
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
            _finding(state, event)
        case FindingResolved() | FindingDismissed():
            refused = state.submissions.get(state.refusals.get(event.finding, ""))
            if refused is not None:
                refused.refusal_closed = True
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
        case CommitReport():
            _claim(state, event)
            unit = _unit(state, event.unit)
            if unit is not None and unit.dispatches and event.sha:
                unit.head = event.sha
        case _:
            _claim(state, event)
    return state


def _accept(state: SlicesState, event: SlicePlanAccepted) -> None:
    plan = event.plan
    submission = state.submissions.get(event.cause)
    if submission is not None:
        submission.status = "accepted"
    for refused in state.submissions.values():
        # A plan accepted for the slice answers every earlier refusal of that slice.
        if refused.slice == plan.slice and refused.refusal and refused.answered_by is None:
            refused.answered_by = event.id
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


def _finding(state: SlicesState, event: FindingRaised) -> None:
    if event.cls == "misaligned":
        state.misaligned[event.id] = Misaligned(
            finding=event.id,
            slice=event.slice,
            criteria=misaligned_criteria(event),
            at=event.at,
            role=event.actor.role,
            producer=event.producer,
        )
        return
    if event.actor.role != "system":
        return
    unroutable = event.evidence.get(MISALIGNED_EVIDENCE_KEY)
    if isinstance(unroutable, str) and unroutable in state.misaligned:
        state.misaligned[unroutable].route = "refused"
        return
    submission_id = event.evidence.get(REFUSAL_EVIDENCE_KEY)
    if isinstance(submission_id, str):
        submission = state.submissions.get(submission_id)
        if submission is not None and submission.status == "pending":
            submission.status = "refused"
            submission.refusal = event.id
            state.refusals[event.id] = submission.id
            problems = event.evidence.get("problems")
            if isinstance(problems, list):
                submission.problems = [str(p) for p in problems]


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
                detail=unit.results.get(entry.result, "")
                or (f"cached result {entry.result}" if entry.cached else ""),
            )
        )


def misaligned_criteria(finding: FindingRaised) -> list[str]:
    """The criteria a misaligned finding names: ``criterion`` and ``evidence["criteria"]``.

    The evidence may be a list or one comma-separated string (as ``loopbus report finding
    --evidence criteria=a,b`` sends it).
    """
    named: list[str] = [finding.criterion] if finding.criterion else []
    raw = finding.evidence.get("criteria")
    if isinstance(raw, str):
        named.extend(part.strip() for part in raw.split(","))
    elif isinstance(raw, list):
        named.extend(str(part).strip() for part in raw)
    return [c for c in dict.fromkeys(named) if c]


FOLD = Fold(name="slices", state_type=SlicesState, initial=initial, apply=apply)


# -- queries ----------------------------------------------------------------------------


def failed_blocker(view: SliceView, unit_id: str) -> str | None:
    """The unit that ended without being done and that ``unit_id`` waits on, transitively.

    ``None`` while every blocker is done or may still be. When several failed, the first
    reached through ``blocked_by`` in plan order is named, so the answer never varies.
    """
    seen: set[str] = set()
    stack = list(reversed(view.units[unit_id].blocked_by))
    while stack:
        blocker_id = stack.pop()
        if blocker_id in seen or blocker_id not in view.units:
            continue
        seen.add(blocker_id)
        blocker = view.units[blocker_id]
        if blocker.state in FAILED_ENDINGS and not awaiting_retry(blocker):
            return blocker_id
        if blocker.state != "done":
            stack.extend(reversed(blocker.blocked_by))
    return None


def is_settled(view: SliceView, unit_id: str) -> bool:
    """Terminal, or never dispatched and doomed by a failed blocker."""
    unit = view.units[unit_id]
    if unit.state in TERMINAL_STATES:
        return not awaiting_retry(unit)
    return not unit.dispatches and failed_blocker(view, unit_id) is not None


def current_group(view: SliceView) -> tuple[int, int] | None:
    """(wave, sub-wave) the slice is in: the first group with a unit not yet settled."""
    for w, wave in enumerate(view.waves):
        for s, group in enumerate(wave):
            if not all(is_settled(view, unit_id) for unit_id in group):
                return (w, s)
    return None


def running(state: SlicesState) -> list[str]:
    """Units dispatched and not yet terminal (or awaiting a retry), in every slice: what
    holds capacity."""
    return [
        unit.unit
        for view in state.slices.values()
        for unit in view.units.values()
        if unit.dispatches and (unit.state not in TERMINAL_STATES or awaiting_retry(unit))
    ]


class Dispatch(msgspec.Struct, frozen=True, kw_only=True):
    slice: str
    unit: str
    wave: int
    sub_wave: int
    position: int
    attempt: int


class BlockDependent(msgspec.Struct, frozen=True, kw_only=True):
    slice: str
    unit: str
    failed: str


class Complete(msgspec.Struct, frozen=True, kw_only=True):
    slice: str
    unit: str
    dispatch: str


class Close(msgspec.Struct, frozen=True, kw_only=True):
    slice: str


class PlanUnits(msgspec.Struct, frozen=True, kw_only=True):
    slice: str
    units: list[str]


class Retry(msgspec.Struct, frozen=True, kw_only=True):
    """Answer the retryable failure ``failure`` of ``unit``: retry it, or say why not."""

    slice: str
    unit: str
    failure: str


class Revive(msgspec.Struct, frozen=True, kw_only=True):
    """Move ``unit`` back to work, as the retry decision ``decision`` granted."""

    slice: str
    unit: str
    decision: str


Action = PlanUnits | Retry | Revive | BlockDependent | Complete | Dispatch | Close


def next_actions(
    state: SlicesState, capacity: int, stopped: frozenset[str] = frozenset()
) -> list[Action]:
    """What the dispatcher should publish now, in this order.

    ``UnitPlanned`` for accepted units not yet planned on the log (after a crash between
    the acceptance and its units); the retry decisions owed to failed units and the moves
    back to work they granted; blocks for undispatched dependents of a failed unit;
    completions of the run-record
    entries of units that reached the barrier; dispatches of the current group's next units
    in dispatch order, slices in acceptance order, up to ``capacity`` running units; and a
    close for each open slice whose units are all settled and whose entries are complete.
    Units in ``stopped`` (reached by an open blocked-by-fact finding) are not dispatched.
    """
    actions: list[Action] = []
    free = capacity - len(running(state))
    for view in sorted(state.slices.values(), key=lambda v: v.rank):
        if view.status == "discarded":
            actions.extend(_completions(view))
            continue
        if view.status != "open":
            continue
        # A unit another slice's plan holds is that slice's to plan: its UnitPlanned here
        # would never count (the fold files it under its owner), so it is never asked for.
        unplanned = [
            u.id
            for u in view.plan.units
            if not view.units[u.id].planned and state.unit_slice.get(u.id) == view.slice
        ]
        if unplanned:
            actions.append(PlanUnits(slice=view.slice, units=unplanned))
        actions.extend(_retries(view))
        for unit_id in view.order:
            unit = view.units[unit_id]
            if unit.dispatches or unit.state in TERMINAL_STATES:
                continue
            failed = failed_blocker(view, unit_id)
            if failed is None:
                continue
            if unit.block is None or unit.block.subject != failed:
                actions.append(BlockDependent(slice=view.slice, unit=unit_id, failed=failed))
        completions = _completions(view)
        actions.extend(completions)
        group = current_group(view)
        if group is None:
            if not completions:
                actions.append(Close(slice=view.slice))
            continue
        wave, sub_wave = group
        for unit_id in view.waves[wave][sub_wave]:
            unit = view.units[unit_id]
            if free <= 0:
                break
            if unit.dispatches or unit.state is not None or unit_id in stopped:
                continue
            if failed_blocker(view, unit_id) is not None:
                continue
            if any(view.units[b].state != "done" for b in unit.blocked_by if b in view.units):
                continue
            actions.append(
                Dispatch(
                    slice=view.slice,
                    unit=unit_id,
                    wave=wave,
                    sub_wave=sub_wave,
                    position=unit.position,
                    attempt=len(unit.dispatches) + 1,
                )
            )
            free -= 1
    return actions


def _retries(view: SliceView) -> list[Retry | Revive]:
    out: list[Retry | Revive] = []
    for unit_id in view.order:
        unit = view.units[unit_id]
        if unit.state != "failed" or unit.failure is None:
            continue
        if unit.retry == "awaiting":
            out.append(Retry(slice=view.slice, unit=unit_id, failure=unit.failure))
        elif unit.retry == "granted" and unit.retry_decision is not None:
            out.append(Revive(slice=view.slice, unit=unit_id, decision=unit.retry_decision))
    return out


def _completions(view: SliceView) -> list[Complete]:
    # A discarded slice's units are never retried: their entries complete as they ended.
    retrying = view.status != "discarded"
    return [
        Complete(slice=view.slice, unit=unit.unit, dispatch=unit.dispatches[-1])
        for unit_id in view.order
        if (unit := view.units[unit_id]).dispatches
        and unit.state in TERMINAL_STATES
        and not (retrying and awaiting_retry(unit))
        and unit.dispatches[-1] not in unit.completed
    ]


def settled_summary(view: SliceView) -> dict[str, list[str]]:
    """Units by how they ended: done, failed, lost, and blocked (never dispatched)."""
    out: dict[str, list[str]] = {"done": [], "failed": [], "lost": [], "blocked": []}
    for unit_id in view.order:
        unit = view.units[unit_id]
        if unit.state in TERMINAL_STATES:
            out[str(unit.state)].append(unit_id)
        elif is_settled(view, unit_id):
            out["blocked"].append(unit_id)
    return out


def waiting_on(view: SliceView) -> dict[str, str]:
    """unit -> what it is waiting on right now, in plain words (empty once terminal)."""
    group = current_group(view)
    out: dict[str, str] = {}
    for unit_id in view.order:
        unit = view.units[unit_id]
        if awaiting_retry(unit):
            out[unit_id] = "the dispatcher's retry decision"
            continue
        if unit.state in TERMINAL_STATES:
            out[unit_id] = ""
            continue
        failed = failed_blocker(view, unit_id)
        if unit.state == "blocked" and unit.block is not None:
            out[unit_id] = f"{unit.block.reason} {unit.block.subject}"
        elif failed is not None and not unit.dispatches:
            out[unit_id] = f"awaiting-dependency {failed} (ended {view.units[failed].state})"
        elif unit.dispatches:
            out[unit_id] = "its builder" if unit.state else "its builder to start"
        elif view.status != "open":
            out[unit_id] = f"nothing: slice {view.status}"
        elif group is not None and (unit.wave, unit.sub_wave) > group:
            pending = [b for b in unit.blocked_by if view.units[b].state != "done"]
            out[unit_id] = (
                f"dependencies {', '.join(pending)}"
                if pending
                else f"wave {group[0]}.{group[1]} to reach the barrier"
            )
        else:
            out[unit_id] = "capacity"
    return out


def record_entries(state: SlicesState, slice_id: str | None = None) -> list[RecordEntry]:
    """The run record: one entry per unit per dispatch, in dispatch order."""
    return [e for e in state.record if slice_id is None or e.slice == slice_id]


def pending_submissions(state: SlicesState) -> list[Submission]:
    """Submissions the system has not answered yet, oldest first."""
    return sorted(
        (s for s in state.submissions.values() if s.status == "pending"), key=lambda s: s.id
    )


def answered_refusals(state: SlicesState) -> list[Submission]:
    """Refused submissions whose slice has since had a plan accepted and whose refusal
    finding is still open: the dispatcher resolves each, oldest first."""
    return sorted(
        (
            s
            for s in state.submissions.values()
            if s.refusal is not None and s.answered_by is not None and not s.refusal_closed
        ),
        key=lambda s: s.id,
    )


def is_operators(misaligned: Misaligned) -> bool:
    """True when the operator raised it (role and producer ``operator``): the only
    misaligned findings the system routes. Anyone else's is refused, never acted on."""
    return misaligned.role == "operator" and misaligned.producer == "operator"


def open_misaligned(state: SlicesState) -> list[Misaligned]:
    return sorted(
        (m for m in state.misaligned.values() if m.route is None), key=lambda m: m.finding
    )


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
