"""The ``reviews`` projection: the reviewer daemon's working memory, folded from the log.

Everything the reviewer must not do twice is derived here, so a restarted daemon picks up
exactly where the log says it stopped:

* ``requests``: every review request, its ``cause`` (the ready transition it answers) and
  whether a verdict closed it; ``by_cause`` maps a cause to its request (or round);
* ``claims``: verdict claims not answered yet by a ``VerdictAccepted`` / ``VerdictRefused``;
* ``pending``: rounds and refusals whose unit transition is not on the log yet;
* ``authors``: the principals that reported as a unit's builder (they may not review it);
* the failing gate results of unit suites and their findings, which gate rounds are made of.

Pure: no I/O, no clock.
"""

import msgspec

from projections.base import Fold
from projections.findings import key_text
from schemas import Event, FindingRaised, FindingResolved, UnitTransitioned, format_target
from schemas.gates import GateResultRecorded, GateSuiteCompleted
from schemas.reviews import (
    ReviewRequested,
    ReviewVerdict,
    RoundClosed,
    VerdictAccepted,
    VerdictRefused,
)
from schemas.slices import UnitDispatched
from schemas.targets import CodeTarget

BESIDE_CHECKS = ("test-vanished", "test-rewritten")
"""Finding classes the gate runner raises beside a suite's checks, failing the suite."""

ESCALATES = "escalates"
"""Evidence key of a reviewer finding that stops a ready unit before any review could be
requested (no head, no eligible reviewer, an unreadable repository): its value is the
ready transition it answers, and the unit is escalated to the operator on the finding."""


class RequestView(msgspec.Struct, kw_only=True):
    """One review request and what became of it."""

    id: str
    unit: str
    round: int
    head: str
    base: str
    reviewer: str
    cause: str
    diff_digest: str
    criteria: list[str] = []
    closed_by: str | None = None
    """The VerdictAccepted/VerdictRefused that closed it."""
    decision: str | None = None
    """The accepted decision, when a verdict was accepted."""
    answered: bool = False
    """The assigned reviewer's claim is on the log (whatever became of it)."""


class PendingAction(msgspec.Struct, kw_only=True):
    """A fact whose unit transition the daemon still owes (``cause`` of that transition)."""

    unit: str
    kind: str
    """``round`` (a RoundClosed) or ``refusal`` (a VerdictRefused that closed a request)."""
    action: str = ""
    ended_by: str | None = None
    finding: str | None = None
    why: str = ""


class GateFinding(msgspec.Struct, kw_only=True, array_like=True):
    """A gate finding, compact: its key parts and, for code, where it points."""

    target: str
    severity: str
    criterion: str
    cls: str
    path: str | None = None
    start: int = 0
    end: int = 0
    nodeid: str | None = None
    """The test a pytest finding is about (its evidence), wherever its frame points."""


class FailingResult(msgspec.Struct, kw_only=True):
    check: str
    outcome: str
    error: str = ""
    findings: list[str] = []


class FailedSuite(msgspec.Struct, kw_only=True):
    """A red gate suite on a unit's commit: the makings of a gate round."""

    unit: str
    commit: str
    failing: list[tuple[str, str, str]] = []
    """(check, outcome, result id) of every entry that did not pass."""
    beside: list[str] = []
    """Findings the runner raised beside the checks that fail the suite on their own (a
    test that vanished, a test the unit's test infrastructure rewrote)."""


class ReviewsState(msgspec.Struct):
    requests: dict[str, RequestView] = {}
    by_cause: dict[str, str] = {}
    open: dict[str, str] = {}
    """unit -> its open request id."""
    latest: dict[str, str] = {}
    """unit -> its latest request id."""
    claims: dict[str, ReviewVerdict] = {}
    answered: dict[str, str] = {}
    """verdict claim id -> the fact that answered it. A re-stored copy of an answered claim
    (same id) is not a new claim: it is not queued again, so it cannot jam the reviewer."""
    pending: dict[str, PendingAction] = {}
    authors: dict[str, list[str]] = {}
    rounds: dict[str, int] = {}
    """unit -> rounds closed."""
    failing: dict[str, FailingResult] = {}
    gate_findings: dict[str, GateFinding] = {}
    unclaimed: list[str] = []
    """Gate finding ids not referenced by any result yet (a result and its findings are
    one batch; whichever arrives first waits here for the other)."""
    open_review: dict[str, dict[str, str]] = {}
    """unit -> key text -> id of the open finding an accepted verdict raised for that key
    (the id the findings projection keeps for the key)."""
    expected: dict[str, str] = {}
    """Finding id -> unit, for findings an accepted verdict raised that are still to come."""
    bases: dict[str, str] = {}
    """unit -> the trunk commit it was last dispatched against."""
    suites: dict[str, FailedSuite] = {}
    """Failing unit suites not closed as a round yet, by suite id."""
    beside: dict[str, list[str]] = {}
    """``unit|commit`` -> findings raised beside that commit's suite, until it arrives (they
    are published in the suite's own batch, just before it)."""


def initial() -> ReviewsState:
    return ReviewsState()


def apply(state: ReviewsState, event: Event) -> ReviewsState:
    unit = getattr(event, "unit", None)
    if event.actor.role == "builder" and isinstance(unit, str):
        authors = state.authors.setdefault(unit, [])
        if event.actor.principal not in authors:
            authors.append(event.actor.principal)
    match event:
        case ReviewRequested():
            state.requests[event.id] = RequestView(
                id=event.id,
                unit=event.unit,
                round=event.round,
                head=event.head,
                base=event.base,
                reviewer=event.reviewer,
                cause=event.cause,
                diff_digest=event.diff_digest,
                criteria=list(event.criteria),
            )
            state.by_cause[event.cause] = event.id
            state.open[event.unit] = event.id
            state.latest[event.unit] = event.id
        case ReviewVerdict():
            if event.id in state.answered:
                return state
            state.claims[event.id] = event
            request = state.requests.get(event.request)
            if request is not None and request.reviewer == event.actor.principal:
                request.answered = True
        case VerdictAccepted():
            state.claims.pop(event.verdict, None)
            state.answered[event.verdict] = event.id
            _close(state, event.request, event.id)
            accepted = state.requests.get(event.request)
            if accepted is not None:
                accepted.decision = event.decision
            for finding_id in event.raised:
                state.expected[finding_id] = event.unit
        case VerdictRefused():
            if event.verdict is not None:
                state.claims.pop(event.verdict, None)
                state.answered[event.verdict] = event.id
            if event.request is not None:
                _close(state, event.request, event.id)
                state.pending[event.id] = PendingAction(
                    unit=event.unit, kind="refusal", finding=event.finding, why=event.reason
                )
        case RoundClosed():
            state.rounds[event.unit] = max(state.rounds.get(event.unit, 0), event.round)
            state.by_cause.setdefault(event.cause, event.id)
            state.suites.pop(event.cause, None)
            if _needs_transition(event):
                state.pending[event.id] = PendingAction(
                    unit=event.unit,
                    kind="round",
                    action=event.action,
                    ended_by=event.ended_by,
                    finding=event.finding,
                    why=event.why,
                )
        case UnitTransitioned():
            if event.cause is not None:
                state.pending.pop(event.cause, None)
        case FindingRaised(producer="gate_runner"):
            _gate_finding(state, event)
            commit = event.evidence.get("commit")
            if (
                event.cls in BESIDE_CHECKS
                and event.actor.role == "system"
                and event.unit is not None
                and isinstance(commit, str)
            ):
                state.beside.setdefault(f"{event.unit}|{commit}", []).append(event.id)
        case FindingRaised(producer="reviewer") if event.id in state.expected:
            raised_for = state.expected.pop(event.id)
            key = key_text(format_target(event.target), event.severity, event.criterion)
            state.open_review.setdefault(raised_for, {}).setdefault(key, event.id)
        case FindingRaised(producer="reviewer", evidence=evidence, unit=str() as unit_id):
            cause = evidence.get(ESCALATES)
            if isinstance(cause, str) and event.actor.role == "system":
                state.by_cause.setdefault(cause, event.id)
                state.pending[event.id] = PendingAction(
                    unit=unit_id, kind="escalate", finding=event.id, why=event.message
                )
        case UnitDispatched(base=str() as base):
            state.bases[event.unit] = base
        case FindingResolved():
            state.gate_findings.pop(event.finding, None)
            if event.unit is not None:
                keys = state.open_review.get(event.unit, {})
                for key, finding_id in list(keys.items()):
                    if finding_id == event.finding:
                        del keys[key]
        case GateResultRecorded():
            _gate_result(state, event)
        case GateSuiteCompleted():
            beside = state.beside.pop(f"{event.unit}|{event.commit}", [])
            if (
                event.unit is not None
                and event.commit is not None
                and event.outcome != "pass"
                and not event.error
                and event.id not in state.by_cause
            ):
                state.suites[event.id] = FailedSuite(
                    unit=event.unit,
                    commit=event.commit,
                    failing=[
                        (e.check, e.outcome, e.result) for e in event.checks if e.outcome != "pass"
                    ],
                    beside=beside,
                )
        case _:
            pass
    return state


def _close(state: ReviewsState, request_id: str, closer: str) -> None:
    request = state.requests.get(request_id)
    if request is None or request.closed_by is not None:
        return
    request.closed_by = closer
    if state.open.get(request.unit) == request_id:
        del state.open[request.unit]


def _needs_transition(event: RoundClosed) -> bool:
    if event.action in ("stopped", "halted"):
        return True
    # A review that sends the unit back clears its readiness; a red gate round already
    # left it not ready, so a promotion or a continue needs no transition there.
    return event.source == "review" and event.action in ("continue", "promoted")


def _gate_finding(state: ReviewsState, event: FindingRaised) -> None:
    target = event.target
    compact = GateFinding(
        target=format_target(target),
        severity=event.severity,
        criterion=event.criterion,
        cls=event.cls,
    )
    nodeid = event.evidence.get("nodeid")
    if isinstance(nodeid, str):
        compact.nodeid = nodeid
    if isinstance(target, CodeTarget):
        compact.path, compact.start, compact.end = target.path, target.start, target.end
    if event.id in state.unclaimed:  # its result arrived first
        state.unclaimed.remove(event.id)
        if not any(event.id in r.findings for r in state.failing.values()):
            return  # referenced by a passing result: not part of any round
    else:
        state.unclaimed.append(event.id)
    state.gate_findings[event.id] = compact


def _gate_result(state: ReviewsState, event: GateResultRecorded) -> None:
    failing = event.outcome != "pass"
    if failing:
        state.failing[event.id] = FailingResult(
            check=event.check,
            outcome=event.outcome,
            error=event.error,
            findings=list(event.findings),
        )
    for finding in event.findings:
        if finding in state.unclaimed:
            state.unclaimed.remove(finding)
            if not failing:
                state.gate_findings.pop(finding, None)
        elif finding not in state.gate_findings:
            state.unclaimed.append(finding)  # the finding is still to come


FOLD = Fold(name="reviews", state_type=ReviewsState, initial=initial, apply=apply)


# -- queries ----------------------------------------------------------------------------


def round_count(state: ReviewsState, unit: str) -> int:
    return state.rounds.get(unit, 0)


def unanswered_claims(state: ReviewsState) -> list[ReviewVerdict]:
    return sorted(state.claims.values(), key=lambda c: c.id)


def requests_to_run(state: ReviewsState) -> list[RequestView]:
    """Open requests whose assigned reviewer has not answered: a restart runs these."""
    found = [state.requests[r] for r in state.open.values()]
    return sorted((r for r in found if not r.answered), key=lambda r: r.id)


def approved_head(state: ReviewsState, unit: str) -> str | None:
    """The head the unit's latest review approved, if its latest review was an approval."""
    latest = state.requests.get(state.latest.get(unit, ""))
    return latest.head if latest is not None and latest.decision == "approve" else None


def authors_of(state: ReviewsState, unit: str) -> list[str]:
    return list(state.authors.get(unit, []))
