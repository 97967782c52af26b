"""Unit facts: a unit planned, and a unit's state transitions.

A unit is in exactly one state: working, blocked, or terminal (done, failed, lost).
Readiness is a flag on a working unit, not a state: ready is not done.
"""

from typing import Literal

import msgspec

from schemas.envelope import EventBase
from schemas.errors import InvalidValue
from schemas.ids import Token, UtcTime

UnitState = Literal["working", "blocked", "done", "failed", "lost"]
UNIT_STATES: tuple[UnitState, ...] = ("working", "blocked", "done", "failed", "lost")
TERMINAL_STATES: frozenset[str] = frozenset({"done", "failed", "lost"})

BlockReason = Literal[
    "awaiting-operator",  # subject: a finding id
    "awaiting-dependency",  # subject: a sibling unit id in the same slice
    "awaiting-gate",  # subject: a check id
    "awaiting-capacity",  # subject: a budget name
]
BLOCK_REASONS: tuple[BlockReason, ...] = (
    "awaiting-operator",
    "awaiting-dependency",
    "awaiting-gate",
    "awaiting-capacity",
)

SUBJECT_KINDS: dict[str, str] = {
    "awaiting-operator": "a finding id",
    "awaiting-dependency": "a sibling unit id in the same slice",
    "awaiting-gate": "a check id",
    "awaiting-capacity": "a budget name",
}
"""What each reason's subject must name (here, beside the reasons, so
``loopbus report blocked --help`` can say it without importing the folds)."""


TransitionBy = Literal[
    "started",  # a builder's started report, after dispatch
    "blocked",  # a builder's blocked report (reason + subject)
    "unblocked",  # a builder's unblocked report
    "commit",  # a builder's commit report: head recorded, readiness cleared
    "gave-up",  # a builder's gave-up report (why)
    "heartbeat-lapse",  # the watchdog: a working unit went silent
    "hold",  # the dispatcher: a planned unit held awaiting a dependency
    "gates",  # gate results for the unit's head commit set or clear readiness
    "merged",  # the merger merged a ready unit and trunk stayed green
    "escalated",  # convergence stopped the unit to ask the operator (awaiting-operator)
    "returned",  # review rejected it, or the merge conflicted or turned trunk red: back to work
    "halted",  # convergence or the operator halted the unit
    "retried",  # the dispatcher tried a failed unit again, one rung up (a retry decision)
]
"""What warranted a transition; the table in ``projections.transitions`` is keyed on it."""


class Block(msgspec.Struct, frozen=True):
    """Why a unit is blocked and the subject it waits on; a reason never stands alone."""

    reason: BlockReason
    subject: str

    def __post_init__(self) -> None:
        if not self.subject:
            raise InvalidValue(
                "block.subject", self.subject, f"{self.reason} must name what it waits on"
            )


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    """The record every terminal state carries.

    ``ended_by`` says what ended the unit (``report``, ``heartbeat-lapse``, ``merge``,
    ``ceiling``, ``progress-test`` …) so that different diagnoses stay distinct.
    """

    summary: str
    ended_by: str
    last_heartbeat: UtcTime | None = None
    lapse_s: float | None = None


class UnitPlanned(EventBase, frozen=True, kw_only=True, tag="unit.planned.v1"):
    """A unit entered an accepted slice plan; it has no state until it is dispatched."""

    unit: Token
    slice: Token
    title: str = ""
    files: list[str] = []
    blocked_by: list[Token] = []
    criteria: list[str] = []
    design_ref: str | None = None

    def subject_suffix(self) -> str:
        return f"unit.{self.unit}"


class UnitTransitioned(EventBase, frozen=True, kw_only=True, tag="unit.transitioned.v1"):
    """The system moved a unit to ``state``; ``cause`` is the id of the event that warranted it.

    A blocked state carries its ``block``; a terminal state carries its ``outcome``. ``by``
    names the row of the transition table (``projections.transitions``) it follows, and
    ``commit`` the unit's head once it submitted one.
    """

    unit: Token
    state: UnitState
    prior: UnitState | None = None
    ready: bool = False
    block: Block | None = None
    outcome: Outcome | None = None
    cause: str | None = None
    by: TransitionBy | None = None
    commit: str | None = None  # the unit's head commit once one was submitted
    evidence: dict[str, str] = {}
    """On a ``gates`` transition that sets ready: each criterion of the unit -> the id of
    the gate result in which it ran and passed as an ordinary test."""

    def __post_init__(self) -> None:
        if (self.state == "blocked") != (self.block is not None):
            raise InvalidValue(
                "block", self.block, "a blocked unit must carry a block, and only a blocked one"
            )
        if (self.state in TERMINAL_STATES) != (self.outcome is not None):
            raise InvalidValue(
                "outcome", self.outcome, "a terminal state must carry an outcome, and only one"
            )
        if self.ready and self.state != "working":
            raise InvalidValue("ready", self.ready, "only a working unit can be ready")

    def subject_suffix(self) -> str:
        return f"unit.{self.unit}"
