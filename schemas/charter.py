"""The charter: what a run is for, how it is judged done, and what it may spend.

An operator writes a charter (objectives, acceptance criteria, budgets, autonomy) and
submits it (:class:`CharterSubmission`, a claim). Nothing is planned or dispatched under
it until an operator approves it (:class:`CharterApprove`, a claim); the charter daemon
answers a valid approval with :class:`CharterApproved` (a fact), which starts the *run*.
A later approved charter supersedes the one in force and starts a new run.

During the run the charter daemon publishes, and only it (system role):

* :class:`RunCriteriaChecked` — after each trunk advance that gates green, which of the
  charter's criteria hold on that trunk commit;
* :class:`RunCheckedIn` — about half the wall-clock budget is spent;
* :class:`RunFinalizing` — about 90% is spent, or the tokens or slices budget is reached:
  no new slice is planned, the open one may finish;
* :class:`RunEnded` — ``met`` (every criterion holds), ``budget`` (the wall clock is
  spent) or ``stopped`` (an operator's :class:`RunStop`).

Every run fact names its ``run``: the id of the :class:`CharterApproved` that started it,
so a late fact about a superseded run cannot end the current one.
"""

from typing import Annotated, Literal

import msgspec

from schemas.criterion_source import source_problem
from schemas.durations import parse_duration
from schemas.envelope import EventBase
from schemas.errors import InvalidValue
from schemas.gates import GitSha
from schemas.ids import EventId, Token

Count = Annotated[int, msgspec.Meta(ge=0)]

Autonomy = Literal["supervised", "full"]
AUTONOMIES: tuple[Autonomy, ...] = ("supervised", "full")

RunState = Literal["none", "awaiting-approval", "running", "finalizing", "ended"]
EndReason = Literal["met", "budget", "stopped"]

DEFAULT_WALL_CLOCK = "2h"
LONG_WALL_CLOCK = "8h"
"""``long = true`` in a charter's ``[budgets]``: a long run."""

CHARTER_SUBJECT = "charter"
RUN_SUBJECT = "run"


class Objective(msgspec.Struct, frozen=True, kw_only=True):
    """One thing the run is for, in the operator's words."""

    id: Token
    text: str

    def __post_init__(self) -> None:
        if not self.text.strip():
            raise InvalidValue(f"objectives.{self.id}.text", self.text, "say what it is for")


class CharterCriterion(msgspec.Struct, frozen=True, kw_only=True):
    """One acceptance criterion, judged by the system on trunk: either a ``check`` of
    ``loopbus.toml`` that passed, or a pytest ``test`` (node id) that ran and passed.

    ``source`` is the text of the test's whole file as the operator approves it: the
    criterion is met only while trunk's file is that code (layout and comments aside).
    Criteria whose tests share a file share its source (one of them may give it). Without
    any, the approval pins the file as trunk had it when the charter was approved."""

    id: Token
    text: str
    check: str = ""
    test: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        if bool(self.check) == bool(self.test):
            raise InvalidValue(
                f"criteria.{self.id}",
                {"check": self.check, "test": self.test},
                "give exactly one of check (a check in loopbus.toml) or test (a pytest node "
                "id such as tests/test_calc.py::test_add)",
            )
        if self.test and "::" not in self.test:
            raise InvalidValue(
                f"criteria.{self.id}.test",
                self.test,
                "a pytest node id names the file and the test: tests/test_calc.py::test_add",
            )
        if self.source and not self.test:
            raise InvalidValue(
                f"criteria.{self.id}.source",
                self.source[:60],
                "source is the text of a test criterion; a check criterion has none",
            )
        problem = source_problem(self.source, self.test) if self.source else None
        if problem is not None:
            raise InvalidValue(
                f"criteria.{self.id}.source",
                self.source[:60],
                f"{problem}; write the test's whole file as it must be on trunk",
            )


class RunBudgets(msgspec.Struct, frozen=True, kw_only=True):
    """What the run may spend; ``0`` means no limit. ``wall_clock`` runs from approval."""

    wall_clock: str = DEFAULT_WALL_CLOCK
    tokens: Count = 0
    slices: Count = 0

    def __post_init__(self) -> None:
        parse_duration(self.wall_clock, "budgets.wall_clock")

    @property
    def wall_clock_s(self) -> float:
        return parse_duration(self.wall_clock, "budgets.wall_clock")


class Charter(msgspec.Struct, frozen=True, kw_only=True):
    """A run's charter: ``text`` is the Markdown body of the file it was written in."""

    id: Token
    title: str
    objectives: tuple[Objective, ...] = ()
    criteria: tuple[CharterCriterion, ...] = ()
    budgets: RunBudgets = RunBudgets()
    autonomy: Autonomy = "supervised"
    text: str = ""

    def __post_init__(self) -> None:
        if not self.title.strip():
            raise InvalidValue("title", self.title, "give the charter a title")
        for field, ids in (
            ("objectives", [o.id for o in self.objectives]),
            ("criteria", [c.id for c in self.criteria]),
        ):
            seen: set[str] = set()
            for one in ids:
                if one in seen:
                    raise InvalidValue(f"{field}.id", one, "each id appears once")
                seen.add(one)
        sources: dict[str, str] = {}
        for criterion in self.criteria:
            if not criterion.source:
                continue
            path = criterion.test.split("::", 1)[0]
            earlier = sources.setdefault(path, criterion.source)
            if earlier.strip() != criterion.source.strip():
                raise InvalidValue(
                    f"criteria.{criterion.id}.source",
                    criterion.source[:60],
                    f"another criterion gives {path} another source; a source is the whole "
                    "file, so criteria in one file give the same text (or only one gives it)",
                )
        for criterion in self.criteria:
            shared = self.source_of(criterion.test) if criterion.test else ""
            problem = source_problem(shared, criterion.test) if shared else None
            if problem is not None:
                raise InvalidValue(
                    f"criteria.{criterion.id}.test",
                    criterion.test,
                    f"the source given for its file: {problem}",
                )

    def source_of(self, test: str) -> str:
        """The source the charter gives for the file of ``test`` (empty: none)."""
        path = test.split("::", 1)[0]
        return next(
            (c.source for c in self.criteria if c.source and c.test.split("::", 1)[0] == path),
            "",
        )

    @property
    def criterion_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.criteria)


# --- claims (an operator's; authority.CLAIM_ROLES makes any other role's a forgery) ---


class CharterSubmission(EventBase, frozen=True, kw_only=True, tag="charter.submission.v1"):
    """ "Here is the charter I want to run": awaits approval until a ``CharterApproved``."""

    charter: Charter

    def subject_suffix(self) -> str:
        return f"{CHARTER_SUBJECT}.submission"


class CharterApprove(EventBase, frozen=True, kw_only=True, tag="charter.approve.v1"):
    """ "Run the charter awaiting approval": ``charter`` names its id (empty: the one
    awaiting), ``submission`` the submission the operator saw (empty: the latest). Loose
    fields on purpose, so that a stale or wrong approval is refused with a finding."""

    charter: str = ""
    submission: str = ""
    why: str = ""

    def subject_suffix(self) -> str:
        return f"{CHARTER_SUBJECT}.approve"


class RunStop(EventBase, frozen=True, kw_only=True, tag="run.stop.v1"):
    """ "End the run now": answered with ``RunEnded(reason="stopped")``."""

    why: str = ""

    def subject_suffix(self) -> str:
        return f"{RUN_SUBJECT}.stop"


# --- facts (the system's only) ---


class CharterApproved(EventBase, frozen=True, kw_only=True, tag="charter.approved.v1"):
    """The run of ``charter`` starts now (this event's ``at``; its ``id`` is the run id).
    ``supersedes`` is the id of the charter in force before, if any."""

    charter: Charter
    supersedes: str | None = None
    claim: EventId | None = None
    submission: EventId | None = None
    by: str = ""
    why: str = ""
    trunk: str = ""
    """Trunk's commit as the merger last recorded it when the charter was approved (empty:
    none yet): where the criteria not pinned here are pinned from."""
    pins: dict[str, str] = {}
    """criterion id -> what it was pinned to at approval: a test's function digest (from
    its ``source``), a check's definition digest (from the adopted ``loopbus.toml``)."""

    def subject_suffix(self) -> str:
        return f"{CHARTER_SUBJECT}.approved"


class RunCriteriaPinned(EventBase, frozen=True, kw_only=True, tag="run.criteria_pinned.v1"):
    """What the criteria the approval could not pin by itself are pinned to, read from git
    at trunk commit ``trunk`` (the approval's): a test's function digest, a check's
    definition digest. ``unpinned`` says why a criterion has no pin; it never holds."""

    run: EventId
    charter: Token
    trunk: str = ""
    pins: dict[str, str] = {}
    unpinned: dict[str, str] = {}
    cause: str = ""
    """Empty for the run's first pinning; else the operator's ``skeleton.approve`` claim
    that pins what the reviewed skeleton wrote for criteria still unpinned."""

    def subject_suffix(self) -> str:
        return f"{RUN_SUBJECT}.pinned"


class RunCriteriaChecked(EventBase, frozen=True, kw_only=True, tag="run.criteria_checked.v1"):
    """Which criteria of the run's charter hold on trunk commit ``trunk``, judged from the
    gate results of that commit (``cause``: the trunk advance or gate suite judged)."""

    run: EventId
    charter: Token
    trunk: GitSha
    held: tuple[str, ...] = ()
    failing: tuple[str, ...] = ()
    cause: str = ""
    detail: dict[str, str] = {}
    """criterion id -> why it does not hold (not run, failed, pending, no such test…)."""
    bodies: dict[str, str] = {}
    """criterion id -> the digest of its test's function as read from git at ``trunk``
    (absent: the test is not there, or no repository was read)."""

    def subject_suffix(self) -> str:
        return f"{RUN_SUBJECT}.criteria"


class RunCheckedIn(EventBase, frozen=True, kw_only=True, tag="run.checked_in.v1"):
    """About half the wall clock is spent: the run reports where it stands."""

    run: EventId
    charter: Token
    elapsed_s: float = 0.0
    wall_clock_s: float = 0.0
    detail: str = ""

    def subject_suffix(self) -> str:
        return f"{RUN_SUBJECT}.checked_in"


class RunFinalizing(EventBase, frozen=True, kw_only=True, tag="run.finalizing.v1"):
    """No new slice is planned from here; the open slice may finish."""

    run: EventId
    charter: Token
    detail: str = ""

    def subject_suffix(self) -> str:
        return f"{RUN_SUBJECT}.finalizing"


class RunEnded(EventBase, frozen=True, kw_only=True, tag="run.ended.v1"):
    """The run is over: nothing more is planned or dispatched under its charter.
    ``claim`` is the ``RunStop`` a ``stopped`` end answers."""

    run: EventId
    charter: Token
    reason: EndReason
    detail: str = ""
    claim: EventId | None = None

    def subject_suffix(self) -> str:
        return f"{RUN_SUBJECT}.ended"


RUN_FACTS = (
    CharterApproved,
    RunCriteriaPinned,
    RunCriteriaChecked,
    RunCheckedIn,
    RunFinalizing,
    RunEnded,
)
