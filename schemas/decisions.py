"""Decisions: a builder met a choice its brief does not settle, and who settled it how.

* :class:`DecisionRequested` (a fact, published by the builder daemon) records each time a
  builder returned a novel decision, and where it was routed: ``auto`` (the project runs in
  ``long`` mode and the builder was confident enough) or ``operator``.
* :class:`DecisionChoice` is an operator's claim, ``loopbus decide``: "choose this option".
* :class:`DecisionRecorded` (a fact) is the decision in force: question, options, the one
  chosen, by whom, the builder's confidence and the rationale. It is what later briefs
  carry. Kept small on purpose: other decision facts extend the family with their own tags.
"""

from __future__ import annotations

from typing import Literal

from loopbus.schemas.builds import Confidence, DecisionKey, DecisionOption
from loopbus.schemas.envelope import EventBase
from loopbus.schemas.ids import EventId, Token

Routing = Literal["auto", "operator"]


class DecisionRequested(EventBase, frozen=True, kw_only=True, tag="decision.requested.v1"):
    """A builder returned novel decision ``decision_id`` for ``unit`` (one event per time)."""

    unit: Token
    decision_id: DecisionKey
    question: str
    options: list[DecisionOption]
    recommended_default: DecisionKey
    confidence: Confidence
    reasoning: str = ""
    routed: Routing
    finding: EventId | None = None
    """For ``operator``: the finding the unit is blocked on while it waits."""

    def subject_suffix(self) -> str:
        return f"decision.{self.unit}"


class DecisionChoice(EventBase, frozen=True, kw_only=True, tag="decision.choice.v1"):
    """An operator's claim: settle ``decision_id`` of ``unit`` with option ``choose``."""

    unit: Token
    decision_id: DecisionKey
    choose: DecisionKey
    why: str = ""

    def subject_suffix(self) -> str:
        return f"decision.{self.unit}"


class DecisionRecorded(EventBase, frozen=True, kw_only=True, tag="decision.recorded.v1"):
    """The decision in force for ``unit``: what was asked, what was chosen, by whom, why."""

    unit: Token
    decision_id: DecisionKey
    question: str
    options: list[DecisionOption]
    chosen: DecisionKey
    by: str
    """``auto`` (long mode took the recommended default) or ``operator:<principal>``."""
    confidence: Confidence
    rationale: str = ""
    cause: EventId | None = None
    """The request (auto) or the operator's choice this records."""

    def subject_suffix(self) -> str:
        return f"decision.{self.unit}"


def option_ids(options: list[DecisionOption]) -> list[str]:
    """The ids of ``options``, in order."""
    return [option.id for option in options]
