"""The ``planner`` projection: where planning the next slice stands. Pure.

A planning *round* starts at its *basis*: the latest event after which earlier tries no
longer count — a charter approved, a slice closed or its plan discarded, reconnaissance
recorded, or the operator closing a ``planner-gave-up`` finding. A plan discarded because
the merger refused its contract starts no round: the discard turns that plan into one
refused try carrying the merger's reasons. Within a round the fold
keeps every try of the planner (refused ones with their reasons, the one proposed), the
operator's approval of a proposal, and whether its submission went out; the planner
daemon's decision reads nothing else, so the re-ask, the bound on tries and a restart
all come from the log.

Across rounds it counts the run's *allowance*: the planner's answers and the
reconnaissance records since the charter was approved (or since the operator closed a
``planning-capped`` finding), which a ``planning-capped`` finding ends; rounds restart, the
allowance does not, so findings that keep re-running reconnaissance cannot plan for ever.

It also keeps the latest reconnaissance record, the ``blocked-by-fact`` findings whose
``evidence.fact`` names a reconnaissance fact (they make that record stale until a
re-run answers them), and the operator's approvals of skeleton slices.
"""

from collections.abc import Mapping

import msgspec

from projections.base import Fold
from projections.contract_landing import CONTRACT_EVIDENCE, MERGER_PRODUCER
from schemas import Event, FindingRaised, FindingResolved
from schemas.authority import REFUSAL_CLASS
from schemas.ids import answer_id
from schemas.lifecycle import FindingDismissed
from schemas.planning import (
    CAPPED,
    GAVE_UP,
    SKELETON_REVIEW,
    PlanApprove,
    PlanAttemptRefused,
    PlanProposed,
    ReconRecorded,
    SkeletonApprove,
)
from schemas.slices import (
    PlanSubmission,
    SliceClosed,
    SlicePlan,
    SlicePlanAccepted,
    SlicePlanDiscarded,
)
from schemas.targets import DecisionTarget, PlanTarget, format_target

CHARTER_APPROVED = "charter.approved.v1"
"""The charter branch's fact (matched by kind so this fold needs nothing else of it)."""


class Attempt(msgspec.Struct, kw_only=True):
    """One refused try for a slice in the current round."""

    slice: str
    attempt: int
    problems: list[str] = []


class Proposal(msgspec.Struct, kw_only=True):
    """The try that stood the plan check, and what became of it."""

    id: str
    slice: str
    attempt: int
    plan: SlicePlan
    autonomy: str
    submission: str
    """The id its submission has (derived, so the fold knows it when it arrives)."""
    approved: str | None = None
    """The operator's approval claim (supervised autonomy)."""
    submitted: bool = False


class Invalidation(msgspec.Struct, kw_only=True):
    """A blocked-by-fact finding naming a reconnaissance fact."""

    finding: str
    fact: str
    message: str
    target: str = ""
    closed: bool = False
    answered: bool = False
    """A reconnaissance re-run answered it."""


class PlannerState(msgspec.Struct, kw_only=True):
    basis: str = ""
    charter_approved: str = ""
    attempts: list[Attempt] = []
    proposals: dict[str, Proposal] = {}
    submissions: dict[str, str] = {}
    """Submission id -> the slice of a proposal it submits (this round's)."""
    recon: ReconRecorded | None = None
    invalidations: dict[str, Invalidation] = {}
    gave_up: dict[str, str] = {}
    """Gave-up finding id -> the basis of the round it ended."""
    skeleton_approved: dict[str, str] = {}
    """Slice -> the operator's approval of it as a skeleton."""
    skeleton_reviews: dict[str, str] = {}
    """Slice -> the skeleton-review finding raised for it."""
    run_basis: str = ""
    """Where the run's allowance starts: the charter approval, or the operator closing a
    ``planning-capped`` finding."""
    run_tries: int = 0
    """The planner's answers since ``run_basis`` (refused or proposed), every round."""
    recon_runs: int = 0
    """Reconnaissance records since ``run_basis``."""
    capped: dict[str, str] = {}
    """Planning-capped finding id -> the ``run_basis`` whose allowance it ended."""
    slices: dict[str, str] = {}
    """Slice -> ``open``, ``closed`` or ``discarded``: which slice is planned next."""
    contract_refusals: dict[str, list[str]] = {}
    """The merger's contract refusal finding -> its reasons (kept until the dispatcher
    discards the plan it refused, which turns them into a refused try)."""


def submission_id(proposal: str) -> str:
    """The id of the submission of a proposal (one per proposal, whoever publishes it)."""
    return answer_id(proposal, "plan-submission")


def _attempted(state: PlannerState, attempt: Attempt) -> None:
    state.attempts.append(attempt)


def _reset(state: PlannerState, basis: str) -> None:
    state.basis = basis
    state.attempts = []
    state.proposals = {}
    state.submissions = {}


def apply(state: PlannerState, event: Event) -> PlannerState:
    system = event.actor.role == "system"
    if event.kind == CHARTER_APPROVED and system:
        state.charter_approved = event.id
        _reset(state, event.id)
        _new_allowance(state, event.id)
        return state
    _slice_status(state, event)
    match event:
        case SlicePlanDiscarded() if system and event.cause in state.contract_refusals:
            _contract_refused(state, event.slice, state.contract_refusals.pop(event.cause))
        case SliceClosed() | SlicePlanDiscarded() if system:
            _reset(state, event.id)
        case ReconRecorded() if system:
            state.recon_runs += 1
            state.recon = event
            for finding in event.answers:
                if finding in state.invalidations:
                    state.invalidations[finding].answered = True
            _reset(state, event.id)
        case PlanAttemptRefused() | PlanProposed() if system and event.basis != state.basis:
            state.run_tries += 1  # a late answer of an earlier round still spent a try
        case PlanAttemptRefused() if system:
            state.run_tries += 1
            _attempted(
                state,
                Attempt(slice=event.slice, attempt=event.attempt, problems=list(event.problems)),
            )
        case PlanProposed() if system:
            state.run_tries += 1
            submission = event.submission or submission_id(event.id)
            state.proposals[event.slice] = Proposal(
                id=event.id,
                slice=event.slice,
                attempt=event.attempt,
                plan=event.plan,
                autonomy=event.autonomy,
                submission=submission,
            )
            state.submissions[submission] = event.slice
        case PlanApprove() if event.actor.role == "operator":
            proposal = state.proposals.get(event.slice)
            seen = not event.proposal or (proposal is not None and event.proposal == proposal.id)
            if proposal is not None and proposal.approved is None and seen:
                proposal.approved = event.id
        case PlanSubmission() if event.id in state.submissions:
            proposal = state.proposals.get(state.submissions[event.id])
            # Only the proposal itself counts: a claim that reuses its (derivable) id with
            # another plan does not mark it submitted.
            if proposal is not None and event.plan == proposal.plan:
                proposal.submitted = True
        case SkeletonApprove() if event.actor.role == "operator":
            state.skeleton_approved.setdefault(event.slice, event.id)
        case FindingRaised() if system:
            _system_finding(state, event)
        case FindingRaised(cls="blocked-by-fact"):
            _blocked(state, event)
        case FindingResolved() | FindingDismissed():
            _closed(state, event.finding, event.id)
    return state


def _slice_status(state: PlannerState, event: Event) -> None:
    if event.actor.role != "system":
        return
    match event:
        case SlicePlanAccepted():
            state.slices[event.plan.slice] = "open"
        case SliceClosed() if event.slice in state.slices:
            state.slices[event.slice] = "closed"
        case SlicePlanDiscarded() if event.slice in state.slices:
            state.slices[event.slice] = "discarded"


def _system_finding(state: PlannerState, event: FindingRaised) -> None:
    if event.cls == "blocked-by-fact":
        _blocked(state, event)
    elif (
        event.producer == MERGER_PRODUCER
        and event.cls == REFUSAL_CLASS
        and isinstance(event.evidence.get(CONTRACT_EVIDENCE), str)
    ):
        refused = event.evidence.get("refused")
        lines = [str(r) for r in refused] if isinstance(refused, list) else []
        state.contract_refusals[event.id] = [
            f"the merger refused the contract at landing: {line}"
            for line in (lines or [event.message])
        ]
    elif event.producer != MACHINERY:
        # The system re-raises a reviewer's or an investigator's findings with the agent's
        # own criterion, class and evidence: only the machinery's own (the planner daemon's
        # and the dispatcher's, producer "standards") may stop planning or count a try.
        return
    elif event.criterion == GAVE_UP and event.cls == "meta":
        state.gave_up[event.id] = str(event.evidence.get("basis", ""))
    elif event.criterion == CAPPED and event.cls == "meta":
        state.capped[event.id] = str(event.evidence.get("basis", ""))
    elif event.criterion == SKELETON_REVIEW and event.cls == "meta" and event.slice:
        state.skeleton_reviews.setdefault(event.slice, event.id)
    elif event.cls == REFUSAL_CLASS:
        # The dispatcher refused a submission of ours: that try is refused, with its reasons.
        claim = event.evidence.get("submission")
        slice_id = state.submissions.pop(claim, None) if isinstance(claim, str) else None
        proposal = state.proposals.pop(slice_id, None) if slice_id else None
        if proposal is not None:
            problems = event.evidence.get("problems")
            lines = [str(p) for p in problems] if isinstance(problems, list) else []
            _attempted(
                state,
                Attempt(
                    slice=proposal.slice,
                    attempt=proposal.attempt,
                    problems=lines or [event.message],
                ),
            )


MACHINERY = "standards"
"""The producer of the planner daemon's findings and of the dispatcher's refusals."""


def _contract_refused(state: PlannerState, slice_id: str, problems: list[str]) -> None:
    """The dispatcher discarded a plan whose contract the merger refused: that plan is one
    refused try of this round, with the merger's reasons (no new round: the tries stay
    bounded), and the slice is planned again."""
    proposal = state.proposals.pop(slice_id, None)
    if proposal is not None:
        state.submissions.pop(proposal.submission, None)
    attempt = proposal.attempt if proposal is not None else next_attempt(state, slice_id)
    _attempted(state, Attempt(slice=slice_id, attempt=attempt, problems=problems))


def _blocked(state: PlannerState, event: FindingRaised) -> None:
    """Record a blocked-by-fact finding as an invalidation of reconnaissance only when it is
    one the system acts on: about a plan or a decision (the dispatcher routes nothing
    else), naming a fact the latest reconnaissance holds when it is raised. Any of these
    re-runs reconnaissance, so each is also bounded by the run's allowance."""
    fact = event.evidence.get("fact")
    if not isinstance(event.target, PlanTarget | DecisionTarget) or state.recon is None:
        return
    known = any(f.id == fact for f in state.recon.facts)
    if isinstance(fact, str) and fact and known and event.id not in state.invalidations:
        state.invalidations[event.id] = Invalidation(
            finding=event.id, fact=fact, message=event.message, target=format_target(event.target)
        )


def _closed(state: PlannerState, finding: str, by: str) -> None:
    found = state.invalidations.get(finding)
    if found is not None:
        found.closed = True
    basis = state.gave_up.pop(finding, None)
    if basis is not None and basis == state.basis:
        _reset(state, by)  # the operator closed the gave-up finding: the planner tries again
    allowance = state.capped.pop(finding, None)
    if allowance is not None and allowance == state.run_basis:
        # The operator closed the planning-capped finding: a new allowance, a new round.
        _new_allowance(state, by)
        _reset(state, by)


def _new_allowance(state: PlannerState, basis: str) -> None:
    state.run_basis, state.run_tries, state.recon_runs = basis, 0, 0


FOLD = Fold(name="planner", state_type=PlannerState, initial=PlannerState, apply=apply)


# -- queries ------------------------------------------------------------------------------


def next_slice(statuses: Mapping[str, str]) -> str:
    """``S1``, ``S2`` …: the first not accepted (a discarded one is planned again), from
    each slice's status (``open``, ``closed`` or ``discarded``)."""
    k = 1
    while statuses.get(f"S{k}", "discarded") != "discarded":
        k += 1
    return f"S{k}"


def planning(state: PlannerState) -> str:
    """The slice the planner is asked for next, or ``""`` (no charter approved, or a slice
    is open: one slice at a time)."""
    if not state.charter_approved or "open" in state.slices.values():
        return ""
    return next_slice(state.slices)


def tries(state: PlannerState, slice_id: str) -> list[Attempt]:
    """This round's refused tries for ``slice_id``, in order."""
    return [a for a in state.attempts if a.slice == slice_id]


def next_attempt(state: PlannerState, slice_id: str) -> int:
    return 1 + max((a.attempt for a in tries(state, slice_id)), default=0)


def refusals(state: PlannerState, slice_id: str) -> list[str]:
    """Every reason this round's tries for ``slice_id`` were refused, oldest first."""
    return [f"try {a.attempt}: {p}" for a in tries(state, slice_id) for p in a.problems]


def gave_up(state: PlannerState) -> bool:
    """A ``planner-gave-up`` finding ended this round."""
    return state.basis in state.gave_up.values()


def capped(state: PlannerState) -> bool:
    """A ``planning-capped`` finding ended the run's allowance: nothing more is planned."""
    return bool(state.run_basis) and state.run_basis in state.capped.values()


def stale_recon(state: PlannerState) -> list[Invalidation]:
    """Open blocked-by-fact findings that say a fact of the latest reconnaissance is
    false and that no re-run answered yet."""
    recon = state.recon
    if recon is None:
        return []
    facts = {f.id for f in recon.facts}
    return [
        found
        for found in state.invalidations.values()
        if not found.closed and not found.answered and found.fact in facts
    ]
