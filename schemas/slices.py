"""Slices: a planner's plan (a claim), and the facts the system derives from it.

A planner submits a :class:`PlanSubmission` on ``report.planner.<slice>``. The dispatcher
validates it and answers with :class:`SlicePlanAccepted` (plus one ``UnitPlanned`` per
unit) or with a refusal finding. Everything after that is a fact on ``slice.<slice>``:
each dispatch (:class:`UnitDispatched`, the run record's stub), each completion at the
barrier (:class:`RunEntryCompleted`), the close with the boot result
(:class:`SliceClosed`), and where a ``misaligned`` finding was routed
(:class:`MisalignmentRouted`, with :class:`SlicePlanDiscarded` on a re-slice).

Builders report token use as :class:`UsageReport` claims on ``report.builder.<unit>``;
the budgets projection sums them.
"""

from typing import Annotated, Literal

import msgspec

from schemas.contract import ContractChanges
from schemas.envelope import EventBase
from schemas.errors import InvalidValue
from schemas.ids import Token

NonNegative = Annotated[float, msgspec.Meta(ge=0)]
Count = Annotated[int, msgspec.Meta(ge=0)]

BUDGET_NAMES: tuple[str, ...] = (
    "gate_wall_clock",
    "tokens_per_unit",
    "rework_rounds",
    "cache_hit_rate",
    "wait",
)
"""The machinery budgets a slice can carry; also the ``budget:<name>`` finding targets."""


class SliceBudgets(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Limits for one slice; ``None`` means the slice declared no limit for that measure.

    ``cache_hit_rate`` is a floor (a fraction in 0..1); every other field is a ceiling.
    """

    gate_wall_clock_s: NonNegative | None = None
    tokens_per_unit: Count | None = None
    rework_rounds: Count | None = None
    cache_hit_rate: NonNegative | None = None
    wait_s: NonNegative | None = None

    def __post_init__(self) -> None:
        if self.cache_hit_rate is not None and not 0 <= self.cache_hit_rate <= 1:
            raise InvalidValue(
                "budgets.cache_hit_rate", self.cache_hit_rate, "a hit rate is a fraction in 0..1"
            )


class PlannedUnit(msgspec.Struct, frozen=True, kw_only=True):
    """One unit of a plan: what it builds, which files it owns, what it waits for."""

    id: Token
    title: str = ""
    files: list[str] = []
    blocked_by: list[Token] = []
    criteria: list[str] = []
    design_ref: str | None = None


class SlicePlan(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A slice as planned: its id, declared capabilities, budgets, and units in plan order.

    ``contract`` is what the slice adds to the contract before its units start (landed by
    the merger as one system commit; omitted when the plan brings none, so a plan without
    one encodes and decodes exactly as before it existed)."""

    slice: Token
    capabilities: list[str] = []
    budgets: SliceBudgets = SliceBudgets()
    units: list[PlannedUnit] = []
    contract: ContractChanges | None = None
    skeleton: bool = False
    """A charter's first slice may be a skeleton (signatures, one pending test per
    criterion, the gate configuration): reviewed by the operator before any build slice
    is planned (docs/planning.md)."""


class PlanSubmission(EventBase, frozen=True, kw_only=True, tag="plan.submission.v1"):
    """A planner's claim: "here is the next slice". The dispatcher decides whether it stands."""

    plan: SlicePlan

    def subject_suffix(self) -> str:
        return f"report.planner.{self.plan.slice}"


class SlicePlanAccepted(EventBase, frozen=True, kw_only=True, tag="slice.plan_accepted.v1"):
    """The system validated a submission; from here the plan is a fact.

    ``pending`` lists the pending criteria it was checked against and ``criteria_source``
    says where they were read (``loopbus.toml@<commit>``). The check is never skipped: a
    plan whose pending criteria cannot be read (no repository configured, an unreadable
    trunk or ``loopbus.toml``) is refused, not accepted unchecked.
    """

    plan: SlicePlan
    cause: str
    pending: list[str] = []
    criteria_source: str = "none"

    def subject_suffix(self) -> str:
        return f"slice.{self.plan.slice}"


class UnitDispatched(EventBase, frozen=True, kw_only=True, tag="unit.dispatched.v1"):
    """The dispatcher started a unit: the run record's stub (a heading with nothing under it).

    ``attempt`` counts this unit's dispatches from 1; ``position`` is its index in the
    slice's dispatch order; ``base`` is the trunk commit it was dispatched against, when
    the project has a repository.
    """

    slice: Token
    unit: Token
    title: str = ""
    wave: Count
    sub_wave: Count
    position: Count
    attempt: Annotated[int, msgspec.Meta(ge=1)] = 1
    files: list[str] = []
    criteria: list[str] = []
    design_ref: str | None = None
    base: str | None = None

    def subject_suffix(self) -> str:
        return f"slice.{self.slice}"


CommandOutcome = Literal["pass", "fail", "error"]


class CommandRun(msgspec.Struct, frozen=True, kw_only=True):
    """A command the system ran for a unit, exactly as run, and what really came of it."""

    check: str
    command: str
    outcome: CommandOutcome
    duration_s: NonNegative = 0.0
    cached: bool = False
    tree: str = ""
    detail: str = ""
    commit: str = ""
    """The commit its suite gated (the unit's head then): what ties a run to the commit
    that merged, when a unit submitted several. Empty: the suite named none, or the entry
    was recorded before it was kept."""


class NotRun(msgspec.Struct, frozen=True, kw_only=True):
    """Something that was not run for a unit, and why."""

    what: str
    why: str


class RunEntryCompleted(EventBase, frozen=True, kw_only=True, tag="record.entry_completed.v1"):
    """The completion of one run-record entry, written when its unit reached the barrier.

    ``dispatch`` is the id of the :class:`UnitDispatched` whose stub this completes; the
    entry is only ever added to, never rewritten. ``returned_nothing`` marks a unit that
    reached a terminal state without reporting anything after its dispatch.
    """

    slice: Token
    unit: Token
    dispatch: str
    state: Literal["done", "failed", "lost"]
    ended_by: str = ""
    summary: str = ""
    commands: list[CommandRun] = []
    files_changed: list[str] = []
    not_run: list[NotRun] = []
    returned_nothing: bool = False
    cause: str | None = None
    lines_changed: int | None = None
    """Added plus removed lines of the unit's change (``None``: not measured; entries
    recorded before it was measured decode as ``None``)."""
    head: str | None = None
    """The unit's head when it ended, as the units daemon's transitions named it (the commit
    it accepted; for a unit that merged, the commit that merged), never a builder's claim.
    ``None``: the daemon accepted no commit of the unit (then every command of the entry ran
    on a commit that was not the unit's), or the entry was recorded before it was kept (then
    no command names its commit either, and none can be tied to one)."""

    def subject_suffix(self) -> str:
        return f"slice.{self.slice}"


class RetryDecided(EventBase, frozen=True, kw_only=True, tag="unit.retry_decided.v1"):
    """The dispatcher's answer to a retryable failure of a dispatched unit (the builder
    gave up, or the progress test stopped it at oversight ``full``).

    ``retry``: the unit goes back to work one rung up (``from_rung`` -> ``to_rung``); the
    transition ``failed -> working`` by ``retried`` that follows names this fact as its
    cause. Otherwise the unit stays failed and ``why`` says what refused it (the ladder is
    spent, the slice's budget is). ``failure`` is the transition that failed the unit; one
    answer per failure."""

    slice: Token
    unit: Token
    failure: str
    ended_by: str
    retry: bool
    from_rung: int
    to_rung: int
    why: str
    cause: str | None = None

    def subject_suffix(self) -> str:
        return f"slice.{self.slice}"


class BootResult(msgspec.Struct, frozen=True, kw_only=True):
    """The boot check run on trunk at the end of a slice: three outcomes, error is red.

    ``result`` is the id of the signed ``GateResultRecorded`` the gate runner recorded for
    the run (``None`` when no run could be made); ``cached`` is true when the gate cache
    answered for an unchanged trunk.
    """

    outcome: CommandOutcome
    check: str = "boot"
    command: str = ""
    commit: str | None = None
    exit_code: int | None = None
    duration_s: NonNegative = 0.0
    detail: str = ""
    result: str | None = None
    cached: bool = False


class SliceClosed(EventBase, frozen=True, kw_only=True, tag="slice.closed.v1"):
    """Every unit of the slice is settled; the increment's boot check ran on trunk.

    ``blocked`` lists units never dispatched because a dependency failed.
    """

    slice: Token
    boot: BootResult
    done: list[Token] = []
    failed: list[Token] = []
    lost: list[Token] = []
    blocked: list[Token] = []
    cause: str | None = None

    def subject_suffix(self) -> str:
        return f"slice.{self.slice}"


Route = Literal["re-slice", "contract-change"]


class MisalignmentRouted(EventBase, frozen=True, kw_only=True, tag="slice.misalignment_routed.v1"):
    """Where a ``misaligned`` finding goes, derived from the units its criteria reach.

    None of those units merged → ``re-slice`` (the plan is discarded, owner ``planner``);
    some merged → ``contract-change`` (work on trunk is at stake, owner ``operator``).
    Never the author: the code did what it was asked.
    """

    slice: Token
    finding: str
    criteria: list[str]
    reached: list[Token] = []
    merged: list[Token] = []
    route: Route
    owner: str

    def subject_suffix(self) -> str:
        return f"slice.{self.slice}"


class SlicePlanDiscarded(EventBase, frozen=True, kw_only=True, tag="slice.plan_discarded.v1"):
    """A slice's plan was discarded (a re-slice): nothing more of it is dispatched."""

    slice: Token
    why: str
    cause: str | None = None

    def subject_suffix(self) -> str:
        return f"slice.{self.slice}"


class UsageReport(EventBase, frozen=True, kw_only=True, tag="usage.report.v1"):
    """A builder's claim of the tokens one of its turns spent on a unit."""

    unit: Token
    tokens_in: Count = 0
    tokens_out: Count = 0
    model: str = ""

    def subject_suffix(self) -> str:
        return f"report.builder.{self.unit}"

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out
