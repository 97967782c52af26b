"""Durable decisions: immutable records of what was decided, by whom, for what and why.

A decision is never edited: a change is a new record that names the one it ``supersedes``.
An operator's record is a claim (``loopbus decision record|supersede``); the ratchet daemon
checks it against the log and publishes the system's record, a fact naming the ``claim``.
The system's own settlements (gate moves) are facts from the start. Only facts are
decisions in force: the decisions fold keeps every record and derives the chain.
``files`` and ``criteria`` say what work a decision bears on: a unit whose
brief lists one of them is briefed with it.

A builder's novel decision is a record of the same kind. The builder daemon publishes
:class:`DecisionRequested` (a fact) each time a builder returns one, routed ``auto`` (the
project runs in ``long`` mode and the builder was confident) or to the ``operator``, whose
answer is a :class:`DecisionChoice` claim (``loopbus decide``); the record then carries the
``unit``, the builder's ``decision_id``, the weighed ``trade_offs`` and its ``cause``.
"""

from typing import Annotated, Any, Literal

import msgspec

from schemas.builds import AutonomyClass, DecisionKey, DecisionOption
from schemas.builds import Confidence as StatedConfidence
from schemas.envelope import EventBase
from schemas.errors import InvalidValue
from schemas.ids import EventId, Token

Confidence = Annotated[float, msgspec.Meta(ge=0, le=1)]


class DecisionRecorded(EventBase, frozen=True, kw_only=True, tag="decision.recorded.v1"):
    """One decision: the question, the options weighed, the one ``chosen``, its ``owner``,
    the objective it ``serves``, the ``evidence`` it rests on and the decision it
    ``supersedes`` (its event ``id`` is the decision id)."""

    question: str
    options: list[str] = []
    chosen: str
    owner: str
    serves: str = ""
    evidence: list[str] = []
    supersedes: EventId | None = None
    confidence: Confidence = 1.0
    rationale: str = ""
    files: list[str] = []
    criteria: list[str] = []
    slice: Token | None = None
    claim: EventId | None = None
    """On the system's record of an operator's decision: the claim it records (the
    system's record is the decision in force; its own ``id`` is the decision id)."""
    unit: Token | None = None
    """A builder's decision: the unit whose round asked it."""
    decision_id: DecisionKey | None = None
    """A builder's decision: the key the builder gave it (repeats are counted by it)."""
    trade_offs: list[DecisionOption] = []
    """A builder's decision: each option with its user-impact/performance/speed/cost notes."""
    stated_confidence: StatedConfidence | None = None
    """A builder's decision: the confidence it stated (``confidence`` is its weight)."""
    cause: EventId | None = None
    """A builder's decision: the request (auto) or the operator's choice this records."""

    @property
    def by(self) -> str:
        """Who decided: ``auto`` (long mode took the default) or ``operator:<principal>``."""
        return self.owner

    def __post_init__(self) -> None:
        if not self.question.strip():
            raise InvalidValue("question", self.question, "state the question decided")
        if not self.chosen.strip():
            raise InvalidValue("chosen", self.chosen, "state the answer chosen")
        if not self.owner.strip():
            raise InvalidValue("owner", self.owner, "name the decision's one owner")
        if self.options and self.chosen not in self.options:
            raise InvalidValue(
                "chosen", self.chosen, f"is not one of the options: {', '.join(self.options)}"
            )

    def subject_suffix(self) -> str:
        return f"decision.{self.unit}" if self.unit else "decision.recorded"


STATED_WEIGHT: dict[str, float] = {"high": 0.9, "med": 0.6, "low": 0.3}
"""A builder's stated confidence as the record's weight (``DecisionRecorded.confidence``)."""

Routing = Literal["auto", "operator"]


class DecisionRequested(EventBase, frozen=True, kw_only=True, tag="decision.requested.v2"):
    """A builder returned novel decision ``decision_id`` for ``unit`` (one event per time),
    or a reviewer sent an auto-picked one to the operator (``escalated_by``)."""

    unit: Token
    decision_id: DecisionKey
    question: str
    options: list[DecisionOption]
    recommended_default: DecisionKey
    confidence: StatedConfidence
    reasoning: str = ""
    routed: Routing
    finding: EventId | None = None
    """For ``operator``: the finding the unit is blocked on while it waits."""
    v: int = 2
    autonomy: AutonomyClass | None = None
    """The class loopbus settled on: the higher of the builder's and :mod:`.autonomy`'s
    reading of the options. ``None`` only on a request stored before classes (v1)."""
    stated_autonomy: AutonomyClass | None = None
    """The class the builder stated (``None``: it stated none)."""
    classified: str = ""
    """Why loopbus's class is higher than the stated one (the words it matched), or ``""``."""
    escalated_by: str | None = None
    """``reviewer:<principal>`` when a reviewer sent an auto-picked decision to the operator."""
    reopens: EventId | None = None
    """The auto-picked record an escalation re-opens."""

    def subject_suffix(self) -> str:
        return f"decision.{self.unit}"


def upcast_requested_v1(doc: dict[str, Any]) -> dict[str, Any]:
    """v1 requests carried no class: they decode as v2 with ``autonomy`` unknown (``None``),
    which says what was known when they were made rather than guessing a class."""
    return {**doc, "kind": "decision.requested.v2", "v": 2}


class DecisionChoice(EventBase, frozen=True, kw_only=True, tag="decision.choice.v1"):
    """An operator's claim: settle ``decision_id`` of ``unit`` with option ``choose``."""

    unit: Token
    decision_id: DecisionKey
    choose: DecisionKey
    why: str = ""

    def subject_suffix(self) -> str:
        return f"decision.{self.unit}"


def option_ids(options: list[DecisionOption]) -> list[str]:
    """The ids of ``options``, in order."""
    return [option.id for option in options]


class ObjectiveDeclared(EventBase, frozen=True, kw_only=True, tag="objective.declared.v1"):
    """An operator declares (``live``) or withdraws a charter objective decisions serve."""

    objective: Token
    text: str = ""
    live: bool = True

    def subject_suffix(self) -> str:
        return f"objective.{self.objective}"


class BlockedRouted(EventBase, frozen=True, kw_only=True, tag="finding.blocked_routed.v1"):
    """Where a ``blocked-by-fact`` finding goes: to reconnaissance, then the slice planner,
    as a request to amend or re-slice. The units it ``reached`` are not dispatched until a
    new plan for the slice, or a decision superseding the one it names, answers it."""

    finding: EventId
    slices: list[Token] = []
    reached: list[Token] = []
    decision: EventId | None = None
    owner: str = "planner"
    via: str = "reconnaissance"

    def subject_suffix(self) -> str:
        return "finding.routed"
