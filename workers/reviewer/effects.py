"""The reviewer's effects: what its decision asks its shell to do.

* :class:`ReadChange` reads a unit head's diff from git (reported back as the ``changes``
  observation); keyed by the head and the base hint, so a diff is read once.
* :class:`RunReview` runs the reviewer command on a review request; keyed by the request,
  so a request is reviewed once per process however often the decision asks.
"""

from __future__ import annotations

from typing import TypeAlias

import msgspec

from projections import reviews as rv
from projections.intents import Effect, IntentOf
from schemas.builds import AutonomyClass, Confidence
from schemas.gates import GateOutcome

READ_CHANGE = "change"
"""The key prefix of :class:`ReadChange`."""
RUN_REVIEW = "review"
"""The key prefix of :class:`RunReview`."""


class ReadChange(Effect, frozen=True, tag="reviewer.read_change.v1"):
    """Read the diff of ``head`` (``hint``: its base as the log knows it)."""

    head: str
    hint: str | None = None

    @property
    def key(self) -> str:
        return f"{READ_CHANGE}:{self.head}:{self.hint or ''}"


class GateResult(msgspec.Struct, frozen=True, kw_only=True):
    """One verified gate result of the head, as the reviewer's document carries it (the
    fields and their order are the document's: the command reads them by name)."""

    check: str
    outcome: GateOutcome
    cached: bool
    duration_s: float
    summary: str
    findings: int


class PickedDecision(msgspec.Struct, frozen=True, kw_only=True):
    """One auto-picked decision as the reviewer reads it (``escalate`` names its id)."""

    decision_id: str
    question: str
    options: list[str]
    chosen: str
    autonomy: AutonomyClass | None = msgspec.field(default=None, name="class")
    """``class`` in the document (a Python keyword here)."""
    confidence: Confidence | None = None
    rationale: str = ""


class RunReview(Effect, frozen=True, tag="reviewer.run_review.v1"):
    """Run the reviewer command on ``request`` (a copy: the fold mutates its own), with the
    verified gate results of its head, the decisions it may auto-pick and the lessons in
    force."""

    request: rv.RequestView
    gate_results: list[GateResult]
    decisions: list[PickedDecision] = []
    lessons: list[str] = []

    @property
    def key(self) -> str:
        return f"{RUN_REVIEW}:{self.request.id}"


ReviewerEffect = ReadChange | RunReview
"""Every effect the reviewer asks for."""

ReviewerIntent: TypeAlias = IntentOf[ReviewerEffect]
"""What the reviewer may ask for (``decide``, ``perform``): publishing, and its own effects."""
