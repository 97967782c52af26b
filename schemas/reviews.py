"""Review, convergence and investigation events.

A review starts as a fact (``ReviewRequested``: the system chose a reviewer for one ready
head of a unit), is answered by a claim (``ReviewVerdict``: what the reviewer command
returned), and ends with a fact (``VerdictAccepted`` or ``VerdictRefused``). Each accepted
verdict closes a round of the unit (``RoundClosed``), which carries the keys convergence is
judged on. ``RungPromoted`` moves a unit up the escalation ladder. Investigations on the
second failure of anything are ``InvestigationRequested`` / ``InvestigationCompleted``.

:class:`VerdictDocument` is the exact JSON a reviewer command must print; it is strict
(unknown fields are refused) because a verdict whose shape is guessed is not a verdict.
"""

from typing import Annotated, Any, Literal

import msgspec

from schemas.envelope import EventBase
from schemas.errors import InvalidValue
from schemas.findings import FindingClass, Producer, Severity
from schemas.gates import GitSha
from schemas.ids import TOKEN_PATTERN, Token
from schemas.scores import AxisScore
from schemas.targets import Target

Decision = Literal["approve", "reject"]
DECISIONS: tuple[Decision, ...] = ("approve", "reject")

SubtractionMode = Literal["added", "context", "file"]
SUBTRACTION_MODES: tuple[SubtractionMode, ...] = ("added", "context", "file")

Convergence = Literal["first", "converging", "stalled", "thrashing"]
"""How a round compares with the one before it; ``first`` has nothing to compare with."""

RoundAction = Literal["approved", "continue", "promoted", "stopped", "halted"]
"""What the system did after a round: let it through, send it back (on the same or a new
rung), stop it on the progress test or the ceiling, or halt it at once."""

EndedBy = Literal["progress-test", "ceiling", "halted"]

Oversight = Literal["full", "supervised", "manual"]
"""``full``: a stop fails the unit. ``supervised`` and ``manual`` (stricter): an operator
decides, the unit waits BLOCKED awaiting-operator."""
OVERSIGHT_LEVELS: tuple[Oversight, ...] = ("full", "supervised", "manual")

TriggerKind = Literal["unit-failed", "trunk-red", "gate-error"]
TRIGGER_KINDS: tuple[TriggerKind, ...] = ("unit-failed", "trunk-red", "gate-error")

Text = Annotated[str, msgspec.Meta(min_length=1)]
Sha = GitSha


ReviewerClass = Literal["defect", "blocked-by-fact"]
"""What a reviewer may raise (see :data:`schemas.authority.FINDING_CLAIMS`): the
system raises an accepted verdict's findings itself, so a verdict never carries a class
only the system may raise (a refusal, trunk-red, a budget breach…)."""


class ReviewFinding(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One finding inside a verdict: a typed target, a severity, the criterion, a message."""

    target: Target
    severity: Severity
    message: Text
    criterion: str = ""
    cls: ReviewerClass = msgspec.field(default="defect", name="class")
    evidence: dict[str, Any] = {}

    def __post_init__(self) -> None:
        if not self.message.strip():
            raise InvalidValue("message", self.message, "say what is wrong in words")


DecisionKey = Annotated[str, msgspec.Meta(pattern=TOKEN_PATTERN)]


class VerdictDocument(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a reviewer command prints on stdout: exactly one JSON object of this shape.

    ``escalate`` names auto-picked decisions of the review's input (their ``decision_id``)
    the reviewer sends to the operator: each is re-opened as an operator decision and the
    unit waits on it."""

    verdict: Decision
    findings: list[ReviewFinding] = []
    summary: str = ""
    escalate: list[DecisionKey] = []
    scores: list[AxisScore] = []
    """A score per axis (docs/verify.md): a slice ships only when each meets its floor."""


class ProposedGate(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A gate an investigation proposes: a memory of the mistake it found.

    ``gate`` is the project-local gate's id (the check's id in ``loopbus.toml``),
    ``check`` the check itself (the command that would have caught it) and ``defect`` the
    class of mistake it catches. It enters the ratchet as Drafted, for the project
    operator to approve or decline."""

    gate: Token
    check: Text
    defect: Text


class InvestigationReport(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What an investigator command may print as JSON (plain text is taken as ``summary``).

    ``gate``, when given, proposes a gate that would have caught what was found."""

    summary: Text
    severity: Severity = "medium"
    target: Target | None = None
    criterion: str = ""
    evidence: dict[str, Any] = {}
    gate: ProposedGate | None = None


class ReviewRequested(EventBase, frozen=True, kw_only=True, tag="review.requested.v1"):
    """The system asked ``reviewer`` to judge ``head`` of ``unit`` against ``base``.

    ``cause`` is the ready transition it answers; ``round`` counts this unit's reviews.
    """

    unit: Token
    round: Annotated[int, msgspec.Meta(ge=1)]
    head: Sha
    base: Sha
    reviewer: Text
    diff_digest: str
    criteria: list[str] = []
    gate_results: int = 0
    cause: str

    def subject_suffix(self) -> str:
        return f"review.{self.unit}"


class ReviewVerdict(EventBase, frozen=True, kw_only=True, tag="review.verdict.v2"):
    """A reviewer's claim: its verdict on the head named by ``request``, as it returned it,
    and the auto-picked decisions it sends to the operator (``escalate``)."""

    unit: Token
    request: str
    head: Sha
    verdict: Decision
    findings: list[ReviewFinding] = []
    summary: str = ""
    v: int = 2
    escalate: list[DecisionKey] = []
    scores: list[AxisScore] = []
    """The reviewer's score per axis (a verdict stored before scores decodes with none)."""

    def subject_suffix(self) -> str:
        return f"report.reviewer.{self.unit}"


def upcast_verdict_v1(doc: dict[str, Any]) -> dict[str, Any]:
    """v1 verdicts could not escalate: they decode as v2 escalating nothing."""
    return {**doc, "kind": "review.verdict.v2", "v": 2}


class VerdictAccepted(EventBase, frozen=True, kw_only=True, tag="verdict.accepted.v1"):
    """The system accepted a verdict; ``decision = approve`` is the approval fact merges act on.

    ``claimed`` is what the reviewer said; ``decision`` what the system accepted, which
    differs only when a ``reject`` had every blocking finding outside the unit's diff.
    ``raised`` are the finding ids published for it, ``subtracted`` the ids of the
    :class:`FindingSubtracted` records for findings outside the diff.
    """

    unit: Token
    verdict: str
    request: str
    reviewer: Text
    decision: Decision
    claimed: Decision
    round: int
    head: Sha
    raised: list[str] = []
    subtracted: list[str] = []
    cause: str

    def subject_suffix(self) -> str:
        return f"review.{self.unit}"


class VerdictRefused(EventBase, frozen=True, kw_only=True, tag="verdict.refused.v1"):
    """A verdict (or a reviewer run that produced none) was not accepted; ``finding`` says why.

    ``verdict`` is the refused claim's id, or ``None`` when the command produced no valid
    verdict at all (malformed output, timeout, non-zero exit).
    """

    unit: Token
    request: str | None = None
    verdict: str | None = None
    reviewer: str
    reason: Text
    finding: str
    cause: str

    def subject_suffix(self) -> str:
        return f"review.{self.unit}"


class FindingSubtracted(EventBase, frozen=True, kw_only=True, tag="finding.subtracted.v1"):
    """A code finding outside the unit's diff, kept on the log for audit but never opened.

    It carries the whole finding, the mode that excluded it and the digest of the diff it
    was measured against, so the subtraction can be re-checked later.
    """

    unit: Token
    producer: Producer
    target: Target
    severity: Severity
    criterion: str = ""
    cls: FindingClass = msgspec.field(default="defect", name="class")
    message: str
    mode: SubtractionMode
    diff_digest: str
    source: str
    why: str

    def subject_suffix(self) -> str:
        return "finding.subtracted"


class RoundClosed(EventBase, frozen=True, kw_only=True, tag="round.closed.v1"):
    """Round ``round`` of ``unit`` is over: what it found and what the system did about it.

    ``finding_keys`` / ``blocking_keys`` are ``target|severity|criterion`` texts, sorted.
    ``failure_signature`` digests the failing checks and finding keys; ``diff_digest`` the
    diff; ``tree`` is the git tree of ``head`` (empty on rounds closed before it was
    recorded). ``rung`` is the rung the round was run on.
    """

    unit: Token
    round: Annotated[int, msgspec.Meta(ge=1)]
    head: Sha
    source: Literal["review", "gate"] = "review"
    tree: str = ""
    finding_keys: list[str] = []
    blocking_keys: list[str] = []
    failing_checks: list[str] = []
    failure_signature: str
    diff_digest: str
    passed: bool
    convergence: Convergence
    action: RoundAction
    ended_by: EndedBy | None = None
    rung: int = 1
    why: str = ""
    finding: str | None = None
    """The finding a stop or a halt rests on (what an escalation is awaiting)."""
    cause: str

    def subject_suffix(self) -> str:
        return f"convergence.{self.unit}"


class RungPromoted(EventBase, frozen=True, kw_only=True, tag="rung.promoted.v1"):
    """``unit`` moved from rung ``from_rung`` to ``to_rung`` (5 is the halt rung)."""

    unit: Token
    from_rung: int
    to_rung: int
    tactic: str
    why: str
    round: int = 0
    cause: str

    def subject_suffix(self) -> str:
        return f"convergence.{self.unit}"


class RoundUnchanged(EventBase, frozen=True, kw_only=True, tag="round.unchanged.v1"):
    """A builder round answered ``completed`` or ``partial`` but left the worktree exactly as
    it found it. Not a failure: it spends a rung of the ladder (``rung`` -> ``to_rung``; the
    :class:`RungPromoted` in the same batch names it), and the unit's next brief says so in
    ``problem``. ``to_rung`` 5 means the ladder is spent and the unit halts."""

    unit: Token
    round: int
    rung: int
    to_rung: int
    status: str
    summary: str = ""
    trigger: str
    """The trigger the round answered (what asked for it)."""

    def subject_suffix(self) -> str:
        return f"convergence.{self.unit}"


class InvestigationRequested(
    EventBase, frozen=True, kw_only=True, tag="investigation.requested.v1"
):
    """The second failure of ``trigger`` happened; one investigation is dispatched for it.

    ``failures`` are the ids of the failure events (first, second); ``key`` is the subject
    token derived from ``trigger`` so that one trigger has exactly one subject.
    """

    trigger: Text
    trigger_kind: TriggerKind
    key: Token
    failures: list[str]
    unit: Token | None = None
    evidence: dict[str, Any] = {}

    def subject_suffix(self) -> str:
        return f"investigation.{self.key}"


class InvestigationCompleted(
    EventBase, frozen=True, kw_only=True, tag="investigation.completed.v1"
):
    """The investigation ``request`` ended; its output is the finding ``finding``."""

    request: str
    trigger: Text
    key: Token
    finding: str
    outcome: Literal["finding", "error"]
    cause: str

    def subject_suffix(self) -> str:
        return f"investigation.{self.key}"


REVIEW_EVENT_TYPES: tuple[type[Any], ...] = (
    ReviewRequested,
    ReviewVerdict,
    VerdictAccepted,
    VerdictRefused,
    FindingSubtracted,
    RoundClosed,
    RungPromoted,
    RoundUnchanged,
    InvestigationRequested,
    InvestigationCompleted,
)
