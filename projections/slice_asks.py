"""What the ``slices`` fold keeps that the dispatcher owes an answer to: submitted plans
(accepted, or refused with the problems found) and ``misaligned`` findings (routed, or
refused).

The state lives in :class:`projections.slices.SlicesState` (``submissions``, ``refusals``,
``misaligned``); these are the fold's steps for those fields and the queries over them.
Only a system-raised finding answers a submission or refuses a route: a finding an agent
shapes like a refusal changes nothing here.
"""

from datetime import datetime
from typing import TYPE_CHECKING, Literal

import msgspec

from schemas import FindingRaised
from schemas.slices import PlanSubmission, SlicePlan, SlicePlanAccepted

if TYPE_CHECKING:  # the fold's state holds these asks; this module only steps them
    from projections.slices import SlicesState

REFUSAL_EVIDENCE_KEY = "submission"
"""A refusal finding names the submission it refuses under this evidence key."""

MISALIGNED_EVIDENCE_KEY = "misaligned"
"""A finding that refuses to route a misaligned finding names it under this key."""


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


def submitted(state: "SlicesState", event: PlanSubmission) -> None:
    if event.id in state.submissions:  # a re-stored copy: already answered or queued
        return
    state.submissions[event.id] = Submission(
        id=event.id, slice=event.plan.slice, plan=event.plan, at=event.at, role=event.actor.role
    )


def accepted(state: "SlicesState", event: SlicePlanAccepted) -> None:
    submission = state.submissions.get(event.cause)
    if submission is not None:
        submission.status = "accepted"
    for refused in state.submissions.values():
        # A plan accepted for the slice answers every earlier refusal of that slice.
        if refused.slice == event.plan.slice and refused.refusal and refused.answered_by is None:
            refused.answered_by = event.id


def finding(state: "SlicesState", event: FindingRaised) -> None:
    """A misaligned finding is an ask; a system finding may refuse a route or a plan."""
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


def finding_closed(state: "SlicesState", finding_id: str) -> None:
    refused = state.submissions.get(state.refusals.get(finding_id, ""))
    if refused is not None:
        refused.refusal_closed = True


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


# -- queries ----------------------------------------------------------------------------


def pending_submissions(state: "SlicesState") -> list[Submission]:
    """Submissions the system has not answered yet, oldest first."""
    return sorted(
        (s for s in state.submissions.values() if s.status == "pending"), key=lambda s: s.id
    )


def answered_refusals(state: "SlicesState") -> list[Submission]:
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


def open_misaligned(state: "SlicesState") -> list[Misaligned]:
    return sorted(
        (m for m in state.misaligned.values() if m.route is None), key=lambda m: m.finding
    )
