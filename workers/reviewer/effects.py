"""The reviewer's effects: what its decision asks its shell to do.

* :class:`ReadChange` reads a unit head's diff from git (reported back as the ``changes``
  observation); keyed by the head and the base hint, so a diff is read once.
* :class:`RunReview` runs the reviewer command on a review request; keyed by the request,
  so a request is reviewed once per process however often the decision asks.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from projections import reviews as rv
from projections.intents import Effect, IntentOf

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


class RunReview(Effect, frozen=True, tag="reviewer.run_review.v1"):
    """Run the reviewer command on ``request`` (a copy: the fold mutates its own), with the
    verified gate results of its head, the decisions it may auto-pick and the lessons in
    force."""

    request: rv.RequestView
    gate_results: list[dict[str, Any]]
    decisions: list[dict[str, Any]] = []
    lessons: list[str] = []

    @property
    def key(self) -> str:
        return f"{RUN_REVIEW}:{self.request.id}"


ReviewerEffect = ReadChange | RunReview
"""Every effect the reviewer asks for."""

ReviewerIntent: TypeAlias = IntentOf[ReviewerEffect]
"""What the reviewer may ask for (``decide``, ``perform``): publishing, and its own effects."""
