"""Merge facts, and the one merge claim: approving a unit's head.

The merger daemon is the only writer of trunk. It answers an approval (an accepted review
verdict, or an :class:`ApproveReport` from a principal who did not author the unit) with
:class:`MergeQueued`, tests each queued unit's merge result before trunk moves
(:class:`CandidateTested`, stage ``candidate``), moves trunk to exactly the tree it tested
(:class:`TrunkAdvanced`), runs the trunk gates on the new trunk (:class:`CandidateTested`,
stage ``trunk``) and, when those are red, reverts the merge (:class:`MergeReverted`). A
real collision never merges (:class:`MergeConflicted`).

Subjects: ``merge.<unit>`` for a unit's queue entry, tests and conflicts; ``trunk`` for
every move of trunk (advances and reverts) and for trunk checks that concern no unit.
Every fact carries ``cause``, the id of the event it answers, which is how a restarted
merger knows what it already did.
"""

from typing import Literal

import msgspec

from schemas.envelope import EventBase
from schemas.gates import GateOutcome, GitSha
from schemas.ids import Token

MergeStage = Literal["candidate", "trunk"]
"""``candidate``: the merge result before trunk moves (trunk-only checks left out).
``trunk``: trunk itself after it moved, every check (the candidate's are cached)."""

MERGE_STAGES: tuple[MergeStage, ...] = ("candidate", "trunk")

ApprovalVia = Literal["verdict", "report"]
"""What the merge acted on: an accepted review verdict (``review.accepted.v1``) or an
``approve`` report the merger validated itself."""

TRUNK_SUBJECT = "trunk"


class ApproveReport(EventBase, frozen=True, kw_only=True, tag="report.approve.v1"):
    """ "Merge this unit's head": a reviewer's (or operator's) approval, a claim.

    ``head`` names the commit approved; the merger refuses the claim when it is not the
    unit's current head, when the unit is not ready, or when the claimant authored the
    unit. Fields are loose on purpose: a malformed claim must reach the merger so that it
    can be refused with a finding that says why.
    """

    unit: Token
    head: str = ""
    note: str = ""

    def subject_suffix(self) -> str:
        return f"report.{self.actor.role}.{self.unit}"


class TrunkRecheck(EventBase, frozen=True, kw_only=True, tag="trunk.recheck.v1"):
    """ "Gate trunk again": an operator's claim that trunk's inputs may have changed outside
    the repository (an interpreter, a tool, a service a check needs). The merger runs every
    trunk check once more, bypassing the cache, and records the verdict."""

    why: str = ""

    def subject_suffix(self) -> str:
        return "trunk.recheck"


class CheckVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """One check of a trunk gate run: its outcome, whether the cache answered, the result."""

    check: Token
    outcome: GateOutcome
    cached: bool
    result: str = ""


class FailingTest(msgspec.Struct, frozen=True, kw_only=True):
    """A test (pytest node id) or, when the check names none, ``check:<id>``, that was red:
    the one-line message, where (a target text), and the failure's detail (the traceback or
    output tail, cut to a few hundred lines' worth)."""

    test: str
    check: Token
    message: str = ""
    target: str = ""
    detail: str = ""


class MergeQueued(EventBase, frozen=True, kw_only=True, tag="merge.queued.v1"):
    """``head`` of ``unit`` joined the merge queue on ``approval`` by ``approver``."""

    unit: Token
    head: GitSha
    approval: str
    approver: str
    via: ApprovalVia
    cause: str

    def subject_suffix(self) -> str:
        return f"merge.{self.unit}"


class CandidateTested(EventBase, frozen=True, kw_only=True, tag="merge.candidate_tested.v1"):
    """The trunk gates ran on ``candidate`` (tree ``tree``), which sits on trunk ``base``.

    Stage ``candidate``: the merge of ``unit`` into trunk, before trunk moved; ``ahead``
    lists the units it was stacked on when its test started (they had merged by the time
    this result counted, so it was tested in parallel with them). Stage ``trunk``: trunk
    itself after it moved (``candidate`` is then the trunk commit); ``unit`` is ``None``
    when trunk moved without the merger (an outside push, or trunk as first found).
    ``failing`` names what was red (the first 50; the gate results list every one).
    ``cause`` is the queue entry, the advance or the revert this answers.
    """

    stage: MergeStage
    unit: Token | None = None
    head: GitSha | None = None
    candidate: GitSha
    tree: GitSha
    base: GitSha | None = None
    ahead: list[Token] = []
    outcome: GateOutcome
    checks: list[CheckVerdict] = []
    failing: list[FailingTest] = []
    error: str = ""
    suite: str | None = None
    cause: str | None = None
    config: str = ""
    """The digest of the adopted configuration the gates judged with (``config.adopted``);
    empty on runs recorded before adoptions existed."""

    @property
    def green(self) -> bool:
        return self.outcome == "pass"

    def subject_suffix(self) -> str:
        return f"merge.{self.unit}" if self.unit else TRUNK_SUBJECT


class TrunkAdvanced(EventBase, frozen=True, kw_only=True, tag="trunk.advanced.v1"):
    """Trunk ``trunk`` moved from ``previous`` to ``merge``: the merge commit of ``unit``'s
    head ``commit``, whose tree ``tree`` is exactly the candidate tree tested green."""

    trunk: str
    unit: Token
    commit: GitSha
    merge: GitSha
    tree: GitSha
    previous: GitSha
    cause: str

    def subject_suffix(self) -> str:
        return TRUNK_SUBJECT


class MergeReverted(EventBase, frozen=True, kw_only=True, tag="trunk.reverted.v1"):
    """Trunk was red after ``merge`` reached it, so ``revert`` undid it (trunk's tree is
    ``tree`` again). ``unit`` is ``None`` when what was reverted was an outside push.
    ``finding`` is the finding sent about it (to the author, or to planning once promoted).
    """

    trunk: str
    unit: Token | None = None
    merge: GitSha
    revert: GitSha
    tree: GitSha
    failing: list[FailingTest] = []
    finding: str
    cause: str

    def subject_suffix(self) -> str:
        return TRUNK_SUBJECT


class MergeConflicted(EventBase, frozen=True, kw_only=True, tag="merge.conflicted.v1"):
    """``head`` of ``unit`` collides with trunk ``base`` in ``paths``; it did not merge and
    ``finding`` (class ``merge-conflict``) carries the conflicting hunks to its author."""

    unit: Token
    head: GitSha
    base: GitSha
    paths: list[str]
    finding: str
    cause: str

    def subject_suffix(self) -> str:
        return f"merge.{self.unit}"


MERGE_EVENT_TYPES = (
    ApproveReport,
    MergeQueued,
    CandidateTested,
    TrunkAdvanced,
    MergeReverted,
    MergeConflicted,
)
