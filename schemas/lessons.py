"""Lessons of a closed slice, and its closeout.

When a slice closes, the lessons daemon records what failed during it, from system facts
only (round closes, merge conflicts, reverts, red merge candidates, the system's
findings): :class:`LessonsRecorded`, one :class:`Lesson` per thing that failed, with the
round it was caught in and the gate that would have caught it sooner. An investigator's
word becomes a lesson only as a claim (``claimed``), never counted towards a recurring
lesson. The daemon then collapses the slice's unit branches and checkouts and records the
branch hygiene that remains: :class:`SliceClosedOut`.
"""

from typing import Annotated, Literal

import msgspec

from schemas.envelope import EventBase
from schemas.errors import InvalidValue
from schemas.ids import EventId, Token

LessonKind = Literal[
    "gate-finding",  # a check of the unit's gate was red in a round
    "review-finding",  # the review blocked a round with a finding
    "merge-conflict",  # the unit's head collided with trunk in the merge queue
    "trunk-red",  # the merge candidate or trunk was red after the unit's merge
    "verifier-finding",  # the verifier found something the gates and review passed
    "investigation",  # an investigator's claim (always ``claimed``)
]
LESSON_KINDS: tuple[LessonKind, ...] = (
    "gate-finding",
    "review-finding",
    "merge-conflict",
    "trunk-red",
    "verifier-finding",
    "investigation",
)

Round = Annotated[int, msgspec.Meta(ge=0)]


class Lesson(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One thing that failed during a slice.

    ``cls`` is the lesson's class, what makes two lessons "the same" across slices (e.g.
    ``trunk-red:tests/test_x.py::test_y``); ``round`` the unit's round it was caught in
    (0: before the unit's first round closed); ``caught_by`` where; ``sooner`` the gate
    that would have caught it sooner (empty when none is known) and ``check`` the command
    of that gate when it is not configured yet (what a recurring lesson drafts).
    ``claimed`` marks a lesson resting on an agent's word (an investigator's claim)."""

    cls: str
    kind: LessonKind
    what: str
    unit: Token | None = None
    round: Round = 0
    caught_by: str
    sooner: str = ""
    check: str = ""
    evidence: list[str] = []
    claimed: bool = False

    def __post_init__(self) -> None:
        if self.kind == "investigation" and not self.claimed:
            raise InvalidValue(
                "claimed", self.claimed, "an investigator's lesson is a claim: set claimed"
            )

    def line(self) -> str:
        """The lesson as one line of a brief or of ``status``."""
        where = f"{self.unit} round {self.round}" if self.unit else "the slice"
        label = "claim (investigator): " if self.claimed else ""
        sooner = f"; sooner: {self.sooner}" if self.sooner else "; no gate covers it yet"
        return f"{label}{self.what} ({where}, caught by {self.caught_by}{sooner})"


class LessonsRecorded(EventBase, frozen=True, kw_only=True, tag="slice.lessons_recorded.v1"):
    """The lessons of slice ``slice``, computed when it closed (``closed`` is its
    ``slice.closed.v1``) by a pure fold of the log."""

    slice: Token
    closed: EventId
    lessons: list[Lesson] = []

    def subject_suffix(self) -> str:
        return f"slice.{self.slice}"


class KeptBranch(msgspec.Struct, frozen=True, kw_only=True):
    """A unit branch closeout did not delete, and why (work not on trunk is never lost)."""

    branch: str
    why: str


class SliceClosedOut(EventBase, frozen=True, kw_only=True, tag="slice.closed_out.v1"):
    """Slice ``slice``'s unit branches and checkouts were collapsed: ``deleted`` the unit
    branches whose commits are on trunk, ``removed`` their checkouts under the units
    directory; ``kept`` the branches left and why. ``branches`` and ``worktrees`` count
    what remains of the project's unit branches and unit checkouts after it."""

    slice: Token
    closed: EventId
    trunk: str
    deleted: list[str] = []
    removed: list[str] = []
    kept: list[KeptBranch] = []
    branches: Annotated[int, msgspec.Meta(ge=0)] = 0
    worktrees: Annotated[int, msgspec.Meta(ge=0)] = 0
    problem: str = ""

    def subject_suffix(self) -> str:
        return f"slice.{self.slice}"
