"""The unit transition table, in code, and an audit that checks a log against it.

Every transition a unit may make is one row: the state it leaves (``None`` for a unit
that was planned and never moved), the state it enters, and what warrants it (``by``,
carried on every :class:`schemas.UnitTransitioned`). Anything not in the table is
forbidden: no row leaves done or lost, the one row leaving failed is the dispatcher's
retry (answering its own retry decision), no claim makes a unit ready or done, and only
the ``gates`` row may set the ready flag.

Some rows hold only under a condition the table names in ``when``; :func:`audit` checks
those conditions too, from the log alone, so a replay can prove that no daemon ever
published a transition the table forbids.
"""

from collections.abc import Iterable
from typing import NamedTuple, get_args

from projections import units as units_fold
from schemas import Event, FindingRaised, UnitState, UnitTransitioned
from schemas.reports import (
    REPORT_VERBS,
    BlockedReport,
    CommitReport,
    GaveUpReport,
    StartedReport,
    UnblockedReport,
)
from schemas.slices import RetryDecided
from schemas.units import TransitionBy

TRANSITION_BY: tuple[TransitionBy, ...] = get_args(TransitionBy)

REPORT_TRIGGERS: frozenset[str] = frozenset(REPORT_VERBS.values())
"""``by`` values that answer a builder's (or operator's) report: ``cause`` is that report."""


class Rule(NamedTuple):
    """One allowed transition: ``prior`` -> ``state`` warranted by ``by``."""

    prior: UnitState | None
    state: UnitState
    by: TransitionBy
    who: str
    when: str = ""


TABLE: tuple[Rule, ...] = (
    Rule(
        None,
        "working",
        "started",
        "units daemon: started report",
        "planned; dispatched if the slice is the dispatcher's",
    ),
    Rule(
        "blocked",
        "working",
        "started",
        "units daemon: started report",
        "the block is the dispatcher's hold on a unit that never started",
    ),
    Rule(None, "blocked", "hold", "dispatcher", "awaiting-dependency on a sibling unit"),
    Rule("blocked", "blocked", "hold", "dispatcher", "the unit is held and never started"),
    Rule(
        "working",
        "blocked",
        "blocked",
        "units daemon: blocked report",
        "a reason of the closed set whose subject resolves",
    ),
    Rule("blocked", "working", "unblocked", "units daemon: unblocked report", "not a hold"),
    Rule("working", "working", "commit", "units daemon: commit report", "readiness cleared"),
    Rule("working", "failed", "gave-up", "units daemon: gave-up report", "it says why"),
    Rule("blocked", "failed", "gave-up", "units daemon: gave-up report", "not a hold"),
    Rule("working", "lost", "heartbeat-lapse", "watchdog", "not ready; silent past the lapse"),
    Rule(
        "working",
        "working",
        "gates",
        "units daemon: verified gate suite",
        "the suite is for the unit's head; ready = the suite passed",
    ),
    Rule("working", "blocked", "escalated", "convergence", "awaiting-operator on a finding"),
    Rule("working", "working", "returned", "review or merger", "readiness cleared"),
    Rule("working", "done", "merged", "merger", "the unit is ready"),
    Rule(None, "failed", "halted", "convergence, dispatcher or operator"),
    Rule("working", "failed", "halted", "convergence, dispatcher or operator"),
    Rule("blocked", "failed", "halted", "convergence, dispatcher or operator"),
    Rule(
        "failed",
        "working",
        "retried",
        "dispatcher",
        "a retry decision granted it: the failure was retryable and the slice's budget allowed",
    ),
)

ALLOWED: frozenset[tuple[UnitState | None, UnitState, TransitionBy]] = frozenset(
    (rule.prior, rule.state, rule.by) for rule in TABLE
)


def allowed(prior: UnitState | None, state: UnitState, by: TransitionBy | None) -> bool:
    """True when the table has the row ``prior -> state`` warranted by ``by``."""
    return by is not None and (prior, state, by) in ALLOWED


_REPORT_TYPES: dict[str, type] = {
    "started": StartedReport,
    "blocked": BlockedReport,
    "unblocked": UnblockedReport,
    "commit": CommitReport,
    "gave-up": GaveUpReport,
}


class Violation(NamedTuple):
    """A transition on the log that the table (or one of its conditions) forbids."""

    event: str
    unit: str
    problem: str


def audit(events: Iterable[Event]) -> list[Violation]:
    """Every transition in ``events`` (one project's log, in order) the table forbids.

    Besides table membership it checks what a row's condition says, and that the log
    tells one story: ``prior`` matches the state the unit was in, a report is answered
    at most once and only by the kind of transition its verb warrants, the ready flag
    is only ever set by gates, and only the system transitions a unit.
    """
    state = units_fold.initial()
    reports: dict[str, Event] = {}
    answered: dict[str, str] = {}
    violations: list[Violation] = []
    for event in events:
        match event:
            case UnitTransitioned():
                view = state.units.get(event.unit)
                for problem in _problems(event, view, reports, answered):
                    violations.append(Violation(event.id, event.unit, problem))
                if event.cause is not None and (
                    event.by in REPORT_TRIGGERS or event.by == "retried"
                ):
                    answered[event.cause] = event.id
            case StartedReport() | BlockedReport() | UnblockedReport() | CommitReport():
                reports[event.id] = event
            case GaveUpReport():
                reports[event.id] = event
            case RetryDecided() if event.retry and event.actor.role == "system":
                reports[event.id] = event
            case FindingRaised(cls=units_fold.REFUSAL_CLASS, evidence=evidence):
                report = evidence.get("report")
                if isinstance(report, str):
                    if report in answered:
                        violations.append(
                            Violation(
                                event.id,
                                event.unit or "",
                                f"report {report} answered twice (already by {answered[report]})",
                            )
                        )
                    answered[report] = event.id
            case _:
                pass
        state = units_fold.apply(state, event)
    return violations


def _problems(
    event: UnitTransitioned,
    view: units_fold.UnitView | None,
    reports: dict[str, Event],
    answered: dict[str, str],
) -> list[str]:
    problems: list[str] = []
    prior = view.state if view is not None else None
    if event.actor.role != "system":
        problems.append(f"published by role {event.actor.role!r}; only the system transitions")
    if view is None:
        problems.append("the unit was never planned")
    if event.prior != prior:
        problems.append(f"says prior={event.prior!r} but the unit was {prior!r}")
    if not allowed(prior, event.state, event.by):
        problems.append(
            f"{prior or 'planned'} -> {event.state} by {event.by!r} is not in the table"
        )
    if event.ready and event.by != "gates":
        problems.append(f"ready set by {event.by!r}; only gate results make a unit ready")
    held = view is not None and view.held
    if event.by == "started" and prior == "blocked" and not held:
        problems.append("started from a block the unit declared itself (not a hold)")
    if event.by in ("unblocked", "gave-up") and held:
        problems.append(f"{event.by} while held by the dispatcher")
    if event.by == "hold" and view is not None and view.started:
        problems.append("a hold on a unit that already started")
    if (
        event.by == "hold"
        and event.block is not None
        and event.block.reason != ("awaiting-dependency")
    ):
        problems.append("a hold that is not awaiting-dependency")
    if (
        event.by == "escalated"
        and event.block is not None
        and event.block.reason != ("awaiting-operator")
    ):
        problems.append("an escalation that is not awaiting-operator")
    if event.by == "merged" and not (view is not None and view.ready):
        problems.append("merged a unit that was not ready")
    if event.by == "heartbeat-lapse" and view is not None and view.ready:
        problems.append("marked a ready unit lost")
    if event.by == "retried":
        granted = reports.get(event.cause or "")
        if not isinstance(granted, RetryDecided) or granted.unit != event.unit:
            problems.append("retried but its cause is not a retry granted for this unit")
        elif event.cause in answered:
            problems.append(
                f"retry {event.cause} answered twice (already by {answered[event.cause]})"
            )
    if event.by in REPORT_TRIGGERS:
        cause = reports.get(event.cause or "")
        wanted = _REPORT_TYPES[event.by]
        if not isinstance(cause, wanted) or getattr(cause, "unit", None) != event.unit:
            problems.append(
                f"by {event.by!r} but its cause is not a {event.by} report of {event.unit}"
            )
        elif event.cause in answered:
            problems.append(
                f"report {event.cause} answered twice (already by {answered[event.cause]})"
            )
    return problems


def system_violations(events: Iterable[Event]) -> list[Violation]:
    """The violations of :func:`audit` in transitions the system published.

    A transition published by any other role is refused by every fold and counted as a
    forgery; what must never happen is a *system* daemon publishing one the table forbids.
    """
    system = {
        event.id
        for event in events
        if isinstance(event, UnitTransitioned) and event.actor.role == "system"
    }
    return [v for v in audit(events) if v.event in system]
