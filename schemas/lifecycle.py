"""A finding's lifecycle after it is raised: dismissed, resolved, reopened.

An operator asks with a :class:`FindingClaim` (a claim, on the operator's claim subject);
the lifecycle daemon checks it against the log (the finding exists, the move fits its
current status, the claimant is an operator) and answers with a fact: a
:class:`FindingDismissed`, a :class:`schemas.findings.FindingResolved` or a
:class:`FindingReopened`, each naming the claim it answers. A dismissed finding stays on
the log and keeps counting: the meta rule measures a gate by its dismissals.
"""

from typing import Literal

from schemas.envelope import EventBase
from schemas.errors import InvalidValue
from schemas.findings import FindingRaised
from schemas.ids import EventId

LifecycleAction = Literal["dismiss", "resolve", "reopen"]
LIFECYCLE_ACTIONS: tuple[LifecycleAction, ...] = ("dismiss", "resolve", "reopen")

DismissReason = Literal["false-positive", "wont-fix", "duplicate"]
DISMISS_REASONS: tuple[DismissReason, ...] = ("false-positive", "wont-fix", "duplicate")


class FindingClaim(EventBase, frozen=True, kw_only=True, tag="finding.claim.v1"):
    """An operator's claim about a finding: dismiss it (with a reason), resolve or reopen it."""

    finding: EventId
    action: LifecycleAction
    reason: DismissReason | None = None
    why: str

    def __post_init__(self) -> None:
        if (self.action == "dismiss") != (self.reason is not None):
            raise InvalidValue(
                "reason",
                self.reason,
                "a dismissal says why it is dismissed (false-positive, wont-fix or "
                "duplicate), and only a dismissal does",
            )
        if not self.why.strip():
            raise InvalidValue("why", self.why, "say why, in a sentence")

    def subject_suffix(self) -> str:
        return f"finding.{self.action}"


class FindingDismissed(EventBase, frozen=True, kw_only=True, tag="finding.dismissed.v1"):
    """The system accepted a dismissal: the finding is closed, and counted as ``reason``."""

    finding: EventId
    reason: DismissReason
    why: str
    claim: EventId
    by: str
    """``role:principal`` of the claimant."""

    def subject_suffix(self) -> str:
        return "finding.lifecycle"


class FindingReopened(EventBase, frozen=True, kw_only=True, tag="finding.reopened.v1"):
    """The system accepted a reopening: the finding is open again, as first raised
    (``original``, carried so that a fold which forgets closed findings can reopen it)."""

    finding: EventId
    original: FindingRaised
    why: str
    claim: EventId
    by: str

    def subject_suffix(self) -> str:
        return "finding.lifecycle"
