"""What a claim or a system fact warrants for a unit: a :class:`Move` or a :class:`Refusal`.

Pure decisions over the units projection (no I/O, no clock: ``now`` is an argument). The
units daemon turns a report into one of these; the watchdog, the dispatcher, the merger
and the reviewer use the system functions (:func:`lapse`, :func:`hold`, :func:`gates`,
:func:`merged`, :func:`returned`, :func:`escalate`, :func:`halt`, :func:`retried`). A
:class:`Move` checks the one table in :mod:`projections.transitions` when it is
made, and
:func:`transition_event` is the only code that turns a move into the fact on the log, so
every transition, whoever establishes it, obeys that table.
"""

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from projections import findings as findings_fold
from projections import gates as gates_fold
from projections.transitions import allowed
from projections.units import UnitsState, UnitView
from schemas import (
    BLOCK_REASONS,
    TERMINAL_STATES,
    Actor,
    Block,
    BlockReason,
    Outcome,
    UnitState,
    UnitTransitioned,
)
from schemas.authority import UNIT_CLAIMANTS
from schemas.ids import is_token
from schemas.reports import (
    CAPACITY_BUDGETS,
    REPORT_VERBS,
    BlockedReport,
    CommitReport,
    GaveUpReport,
    StartedReport,
    UnblockedReport,
    UnitReport,
)
from schemas.units import SUBJECT_KINDS, TransitionBy

CLAIMANT_ROLES = frozenset(UNIT_CLAIMANTS)
"""Who may report on a unit (:data:`schemas.authority.UNIT_CLAIMANTS`)."""

SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?\Z")


@dataclass(frozen=True)
class Move:
    """A transition the table allows: the publisher stamps it with an id, actor and time."""

    unit: str
    prior: UnitState | None
    state: UnitState
    by: TransitionBy
    cause: str | None = None
    ready: bool = False
    block: Block | None = None
    outcome: Outcome | None = None
    commit: str | None = None
    evidence: tuple[tuple[str, str], ...] = ()
    """(criterion, result id) pairs a ready transition carries."""

    def __post_init__(self) -> None:
        if not allowed(self.prior, self.state, self.by):  # a bug here must never reach the log
            raise AssertionError(f"{self.prior} -> {self.state} by {self.by} is not in the table")


@dataclass(frozen=True)
class Refusal:
    """Why a claim (or a system request) warrants no transition.

    ``code`` is a short stable name (the refusal finding's criterion); ``message`` says
    what was wrong and what to do.
    """

    unit: str
    code: str
    message: str
    report: str | None = None


Verdict = Move | Refusal


def transition_event(move: Move, project: str, actor: Actor, event_id: str) -> UnitTransitioned:
    """The fact a :class:`Move` stands for: the only place a unit transition is built."""
    return UnitTransitioned(
        id=event_id,
        project=project,
        actor=actor,
        unit=move.unit,
        state=move.state,
        prior=move.prior,
        ready=move.ready,
        block=move.block,
        outcome=move.outcome,
        cause=move.cause,
        by=move.by,
        commit=move.commit,
        evidence=dict(move.evidence),
    )


@dataclass(frozen=True)
class References:
    """What a block's subject may resolve against, beyond the units themselves."""

    open_findings: Collection[str] = ()
    known_checks: Collection[str] = ()
    """Checks the project is known to have; empty means unknown, and any check id goes."""

    @classmethod
    def from_states(
        cls,
        findings: findings_fold.FindingsState | None,
        gates: gates_fold.GatesState | None,
        extra_checks: Collection[str] = (),
    ) -> "References":
        open_ids = (
            frozenset(f.id for f in findings_fold.open_findings(findings)) if findings else ()
        )
        checks = set(extra_checks)
        if gates is not None:
            checks.update(entry.check for entry in gates.cache.values())
            for suite in gates.suites.values():
                checks.update(entry.check for entry in suite.checks)
        return cls(open_findings=open_ids, known_checks=frozenset(checks))


def verb(report: UnitReport) -> str:
    return REPORT_VERBS[type(report)]


# -- claims -------------------------------------------------------------------------------


def decide(units: UnitsState, report: UnitReport, refs: References = References()) -> Verdict:
    """The transition ``report`` warrants against the current state, or why it warrants none."""
    refusal = _refuse(units, report, refs)
    if isinstance(refusal, Refusal):
        return refusal
    view = refusal
    match report:
        case StartedReport():
            return Move(
                report.unit, view.state, "working", "started", cause=report.id, commit=view.head
            )
        case BlockedReport():
            block = Block(reason=cast(BlockReason, report.reason), subject=report.subject.strip())
            return Move(
                report.unit,
                view.state,
                "blocked",
                "blocked",
                cause=report.id,
                block=block,
                commit=view.head,
            )
        case UnblockedReport():
            return Move(
                report.unit, view.state, "working", "unblocked", cause=report.id, commit=view.head
            )
        case CommitReport():
            return Move(
                report.unit, view.state, "working", "commit", cause=report.id, commit=report.sha
            )
        case GaveUpReport():
            outcome = Outcome(summary=report.why.strip(), ended_by="gave-up")
            return Move(
                report.unit,
                view.state,
                "failed",
                "gave-up",
                cause=report.id,
                outcome=outcome,
                commit=view.head,
            )
    raise AssertionError(f"unhandled report {report!r}")  # pragma: no cover


def _refuse(units: UnitsState, report: UnitReport, refs: References) -> Refusal | UnitView:
    """A refusal, or the unit's view when the claim stands."""
    name = verb(report)

    def no(code: str, message: str) -> Refusal:
        return Refusal(report.unit, code, message, report=report.id)

    if report.actor.role not in CLAIMANT_ROLES:
        return no(
            "claimant-role",
            f"a {name} report must come from a builder or an operator, "
            f"not role {report.actor.role!r}",
        )
    view = units.units.get(report.unit)
    if view is None or not view.slice:
        return no(
            "unit-not-planned",
            f"unit {report.unit} was never planned; a unit exists "
            "only once an accepted plan names it",
        )
    if view.state in TERMINAL_STATES:
        ended = view.outcome.ended_by if view.outcome else view.state
        return no(
            "terminal", f"unit {report.unit} is {view.state} ({ended}); a terminal state is final"
        )
    started = view.state == "working" or (view.state == "blocked" and not view.held)
    if isinstance(report, StartedReport):
        if started:
            return no("already-started", f"unit {report.unit} is already {view.state}")
        if view.slice in units.governed and view.dispatched == 0:
            return no(
                "not-dispatched",
                f"unit {report.unit} has not been dispatched; "
                "report started once the dispatcher has dispatched it",
            )
        return view
    if view.held:
        subject = view.block.subject if view.block else "a dependency"
        return no(
            "held",
            f"unit {report.unit} is held by the dispatcher awaiting {subject}; "
            "it starts when it is dispatched",
        )
    if not started:
        return no("not-started", f"unit {report.unit} has not started; report started first")
    holder = view.holder
    if report.actor.role == "builder" and holder is not None and report.actor != holder:
        # The round is its holder's (the claimant whose start the system accepted), as
        # only its heartbeats count; another builder may not commit, block, unblock or
        # give up in its place. An operator may still speak for any unit.
        return no(
            "not-holder",
            f"unit {report.unit} is held by {holder.role}:{holder.principal}, whose "
            f"started report the system accepted; {report.actor.role}:"
            f"{report.actor.principal} may not report {name} for it",
        )
    match report:
        case BlockedReport():
            if view.block is not None:
                return no(
                    "already-blocked",
                    f"unit {report.unit} is already blocked "
                    f"{view.block.reason} on {view.block.subject}; report unblocked first",
                )
            problem = block_problem(units, view, report.reason, report.subject, refs)
            return no(*problem) if problem else view
        case UnblockedReport():
            if view.state != "blocked":
                return no("not-blocked", f"unit {report.unit} is {view.state}, not blocked")
            return view
        case CommitReport():
            if view.state != "working":
                return no(
                    "not-working",
                    f"unit {report.unit} is blocked; report unblocked before submitting a commit",
                )
            if not SHA.match(report.sha):
                return no(
                    "commit-sha",
                    f"sha {report.sha!r} is not a full commit id (40 or 64 lowercase hex digits)",
                )
            return view
        case GaveUpReport():
            if not report.why.strip():
                return no("gave-up-without-why", "a unit that gives up must say why (--why)")
            return view
    raise AssertionError(f"unhandled report {report!r}")  # pragma: no cover


def block_problem(
    units: UnitsState, view: UnitView, reason: str, subject: str, refs: References
) -> tuple[str, str] | None:
    """(code, message) when ``reason``/``subject`` cannot stand as a block, else ``None``."""
    if reason not in BLOCK_REASONS:
        return (
            "block-reason-unknown",
            f"reason {reason!r} is not one of: {', '.join(BLOCK_REASONS)}",
        )
    wanted = SUBJECT_KINDS[reason]
    subject = subject.strip()
    if not subject:
        return "block-subject-missing", f"{reason} must name its subject ({wanted})"

    def unresolved(why: str) -> tuple[str, str]:
        return "block-subject-unresolved", f"{reason} names {subject!r}, which {why}"

    if reason == "awaiting-operator":
        if subject not in refs.open_findings:
            return unresolved("is not the id of an open finding in this project")
    elif reason == "awaiting-dependency":
        sibling = units.units.get(subject)
        if subject == view.unit:
            return unresolved("is this unit itself")
        if sibling is None or not sibling.slice:
            return unresolved("is not a planned unit")
        if sibling.slice != view.slice:
            return unresolved(f"is in slice {sibling.slice}, not in this unit's slice {view.slice}")
    elif reason == "awaiting-gate":
        if not is_token(subject):
            return unresolved("is not a check id (letters, digits, '_' or '-')")
        if refs.known_checks and subject not in refs.known_checks:
            known = ", ".join(sorted(refs.known_checks))
            return unresolved(f"is not a check of this project (known: {known})")
    elif subject not in CAPACITY_BUDGETS:  # awaiting-capacity
        return unresolved(f"is not a budget (one of: {', '.join(CAPACITY_BUDGETS)})")
    return None


# -- system facts -------------------------------------------------------------------------


def last_alive(view: UnitView, heartbeat: datetime | None) -> datetime | None:
    """The later of the unit's last heartbeat and its last transition."""
    moments = [m for m in (heartbeat, view.since) if m is not None]
    return max(moments) if moments else None


def lapse(view: UnitView, heartbeat: datetime | None, lapse_s: float, now: datetime) -> Move | None:
    """LOST when a working, not-ready unit has been silent longer than ``lapse_s`` at ``now``.

    A ready unit waits on review and merge, which are the system's to do, so its silence
    is not a lapse; its clock restarts with the transition that hands it back.
    """
    if view.state != "working" or view.ready:
        return None
    alive = last_alive(view, heartbeat)
    if alive is None or (now - alive).total_seconds() <= lapse_s:
        return None
    last = heartbeat.isoformat() if heartbeat else "never"
    outcome = Outcome(
        summary=f"silent for longer than the {lapse_s:g}s lapse (last heartbeat: {last})",
        ended_by="heartbeat-lapse",
        last_heartbeat=heartbeat,
        lapse_s=lapse_s,
    )
    return Move(view.unit, "working", "lost", "heartbeat-lapse", outcome=outcome, commit=view.head)


def gates(
    view: UnitView,
    commit: str | None,
    passed: bool,
    cause: str,
    evidence: Mapping[str, str] | None = None,
) -> Move | None:
    """Set (or clear) ready from a verified suite for the unit's head; else nothing.
    ``evidence``: criterion -> result id, carried when it sets ready."""
    if view.state != "working" or commit is None or commit != view.head or view.ready == passed:
        return None
    return Move(
        view.unit,
        "working",
        "working",
        "gates",
        cause=cause,
        ready=passed,
        commit=view.head,
        evidence=tuple(sorted((evidence or {}).items())) if passed else (),
    )


def hold(units: UnitsState, view: UnitView, sibling: str, cause: str | None) -> Verdict:
    """The dispatcher holds a planned unit awaiting ``sibling``."""
    if view.started or (view.state is not None and not view.held):
        return Refusal(
            view.unit,
            "already-started",
            f"unit {view.unit} already started; only a unit that never started can be held",
        )
    problem = block_problem(units, view, "awaiting-dependency", sibling, References())
    if problem is not None:
        return Refusal(view.unit, *problem)
    block = Block(reason="awaiting-dependency", subject=sibling)
    if view.block == block:
        return Refusal(view.unit, "already-held", f"unit {view.unit} is already held on {sibling}")
    return Move(view.unit, view.state, "blocked", "hold", cause=cause, block=block)


def escalate(view: UnitView, finding: str, refs: References, cause: str | None) -> Verdict:
    """Convergence stops a working unit and asks the operator (finding ``finding``)."""
    if view.state != "working":
        return Refusal(view.unit, "not-working", f"unit {view.unit} is {view.state}")
    if finding not in refs.open_findings:
        return Refusal(
            view.unit,
            "block-subject-unresolved",
            f"awaiting-operator names {finding!r}, which is not an open finding",
        )
    block = Block(reason="awaiting-operator", subject=finding)
    return Move(
        view.unit, "working", "blocked", "escalated", cause=cause, block=block, commit=view.head
    )


def returned(view: UnitView, cause: str | None) -> Verdict:
    """Review rejected, or the merge conflicted or turned trunk red: back to work."""
    if view.state != "working":
        return Refusal(view.unit, "not-working", f"unit {view.unit} is {view.state}")
    return Move(view.unit, "working", "working", "returned", cause=cause, commit=view.head)


def merged(view: UnitView, cause: str | None, summary: str) -> Verdict:
    """The merger merged the unit and trunk stayed green: DONE, the only way there."""
    if view.state != "working" or not view.ready:
        return Refusal(
            view.unit,
            "not-ready",
            f"unit {view.unit} is not ready; only a ready unit can be merged",
        )
    outcome = Outcome(summary=summary, ended_by="merge")
    return Move(
        view.unit, "working", "done", "merged", cause=cause, outcome=outcome, commit=view.head
    )


def retried(view: UnitView, cause: str) -> Verdict:
    """The dispatcher tries a failed unit again (``cause``: the retry decision granting
    it): back to work on its head, the ready flag clear."""
    if view.state != "failed":
        return Refusal(view.unit, "not-failed", f"unit {view.unit} is {view.state}, not failed")
    return Move(view.unit, "failed", "working", "retried", cause=cause, commit=view.head)


def halt(view: UnitView, cause: str | None, why: str, *, ended_by: str = "halted") -> Verdict:
    """Stop a unit for good: FAILED, its outcome saying what ended it (``halted``, or the
    convergence rule that stopped it: ``progress-test``, ``ceiling``)."""
    if view.state in TERMINAL_STATES:
        return Refusal(view.unit, "terminal", f"unit {view.unit} is already {view.state}")
    outcome = Outcome(summary=why, ended_by=ended_by)
    return Move(
        view.unit, view.state, "failed", "halted", cause=cause, outcome=outcome, commit=view.head
    )
