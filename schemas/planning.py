"""The planner: what it is asked (:class:`PlanBrief`), what it answers
(:class:`PlannerEnvelope`), and the facts and claims around it.

The planner daemon (``workers/planner``) asks the ``[plan] command`` for the next slice of
a running charter. Its answer goes through the same validation as ``loopbus plan check``;
every try is a fact (:class:`PlanProposed` when it stands, :class:`PlanAttemptRefused`
with the reasons when it does not), so the re-ask, the bound on tries and a restart are
decided from the log alone. Reconnaissance (``[recon] command``) is recorded as
:class:`ReconRecorded`. An operator approves a proposed plan at ``supervised`` autonomy
(:class:`PlanApprove`) and a closed skeleton slice before any build slice is planned
(:class:`SkeletonApprove`); both are claims only the operator makes.
"""

from typing import Any, Literal

import msgspec

from schemas.envelope import EventBase
from schemas.ids import Token
from schemas.slices import SlicePlan

BRIEF_SCHEMA = "loopbus.plan-brief.v1"
RECON_BRIEF_SCHEMA = "loopbus.recon-brief.v1"

GAVE_UP = "planner-gave-up"
"""The criterion of the finding raised when the planner's tries are spent."""
SKELETON_REVIEW = "skeleton-review"
"""The criterion of the finding that asks the operator to review a closed skeleton slice."""
CAPPED = "planning-capped"
"""The criterion of the finding raised when a run spent its planner tries or its
reconnaissance runs (``[plan] max_run_tries``, ``[recon] max_runs``): planning stops."""


# -- the brief and the envelope (stdin and stdout of the planner command) ------------------


class TreeEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One file of trunk's tree."""

    path: str
    size: int = 0


class ReconFact(msgspec.Struct, frozen=True, kw_only=True):
    """One fact reconnaissance established about the repository."""

    id: Token
    text: str


class ReconFindings(msgspec.Struct, frozen=True, kw_only=True):
    """What the ``[recon] command`` prints: ``{"facts": [{"id": "F1", "text": "..."}]}``."""

    facts: list[ReconFact] = []


class BriefSlice(msgspec.Struct, frozen=True, kw_only=True):
    """A slice already closed, its plan, how it ended and its run record (one line a
    dispatch)."""

    slice: str
    skeleton: bool = False
    units: list[str] = []
    done: list[str] = []
    failed: list[str] = []
    boot: str = ""
    record: list[str] = []


class BriefFinding(msgspec.Struct, frozen=True, kw_only=True):
    """An open finding routed to the planner (blocked-by-fact, a re-slice, contract-wrong)."""

    id: str
    cls: str
    target: str
    message: str
    fact: str = ""
    """The reconnaissance fact a blocked-by-fact finding says is false (its ``evidence.fact``)."""


class BriefDecision(msgspec.Struct, frozen=True, kw_only=True):
    """A decision in force."""

    id: str
    question: str = ""
    chosen: str = ""
    why: str = ""


class PlanBrief(msgspec.Struct, frozen=True, kw_only=True):
    """What the planner command reads on stdin (JSON).

        ``slice`` is the id to plan (the next one: ``S1``, ``S2`` …); ``attempt`` counts the
        tries for it (from 1); ``refusals`` are the reasons earlier tries were refused, one
        line each — fix every one. ``skeleton_allowed`` is true only for a charter's first
        slice. ``lessons`` are the lessons in force, one line each, recurring first (see
    docs/ratchet.md, "Lessons and closeout").
    """

    schema: str = BRIEF_SCHEMA
    project: str
    kind: Literal["build"] = "build"
    slice: str
    attempt: int = 1
    skeleton_allowed: bool = False
    used_units: list[str] = []
    charter: dict[str, Any] = {}
    recon: list[ReconFact] = []
    recon_error: str = ""
    tree: list[TreeEntry] = []
    tree_more: int = 0
    pending: list[str] = []
    closed: list[BriefSlice] = []
    findings: list[BriefFinding] = []
    decisions: list[BriefDecision] = []
    lessons: list[str] = []
    refusals: list[str] = []


class PlannerEnvelope(msgspec.Struct, frozen=True, kw_only=True):
    """What the planner command prints: ``{"plan": {...}, "summary": "..."}`` with the plan
    as the plan file's JSON. Plain plan text (the TOML or JSON ``loopbus plan check``
    takes) is read too."""

    plan: dict[str, Any]
    summary: str = ""


class ReconBrief(msgspec.Struct, frozen=True, kw_only=True):
    """What the recon command reads on stdin: the charter, and the facts a finding said
    were false (when this is a re-run)."""

    schema: str = RECON_BRIEF_SCHEMA
    project: str
    charter: dict[str, Any] = {}
    previous: list[ReconFact] = []
    invalidated: list[BriefFinding] = []


# -- events --------------------------------------------------------------------------------


class ReconRecorded(EventBase, frozen=True, kw_only=True, tag="recon.recorded.v1"):
    """Reconnaissance ran for a charter: the facts it established (or why it could not).

    ``answers`` lists the blocked-by-fact findings this run answers (a re-run because they
    said a fact of the previous one was false)."""

    charter: str
    facts: list[ReconFact] = []
    error: str = ""
    answers: list[str] = []

    def subject_suffix(self) -> str:
        return "plan.recon"


class PlanProposed(EventBase, frozen=True, kw_only=True, tag="plan.proposed.v1"):
    """The planner's answer stood the plan check: this plan is proposed for ``slice``.

    ``autonomy`` ``full``: it is submitted at once (``submission`` names the claim);
    ``supervised``: it waits for ``loopbus approve --plan SLICE``."""

    slice: Token
    charter: str
    attempt: int
    plan: SlicePlan
    skeleton: bool = False
    summary: str = ""
    autonomy: str = "supervised"
    submission: str = ""
    basis: str = ""
    """The event the planning round started from (its tries are counted from it)."""

    def subject_suffix(self) -> str:
        return f"plan.{self.slice}"


class PlanAttemptRefused(EventBase, frozen=True, kw_only=True, tag="plan.attempt_refused.v1"):
    """The planner's answer for ``slice`` was refused; ``problems`` go back to it."""

    slice: Token
    charter: str
    attempt: int
    problems: list[str]
    basis: str = ""

    def subject_suffix(self) -> str:
        return f"plan.{self.slice}"


class PlanApprove(EventBase, frozen=True, kw_only=True, tag="plan.approve.v1"):
    """The operator approves the plan proposed for ``slice`` (supervised autonomy):
    ``proposal`` names the ``plan.proposed`` the operator saw, so an approval never passes
    to a later proposal for the same slice (a re-ask, a new round). Empty in approvals
    recorded before it existed: those apply to the slice's proposal of their time."""

    slice: Token
    why: str
    proposal: str = ""

    def subject_suffix(self) -> str:
        return f"approve.plan.{self.slice}"


class SkeletonApprove(EventBase, frozen=True, kw_only=True, tag="skeleton.approve.v1"):
    """The operator approves the closed skeleton slice ``slice``: build slices may follow."""

    slice: Token
    why: str

    def subject_suffix(self) -> str:
        return f"approve.skeleton.{self.slice}"


def plan_brief_schema() -> dict[str, Any]:
    """The JSON Schema of the planner's brief, generated from :class:`PlanBrief` (shown in
    docs/planning.md, where a test keeps it equal)."""
    return msgspec.json.schema(PlanBrief)
