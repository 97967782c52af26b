"""The builder's effects: what its decision asks its shell to do.

One effect: run one build round of a unit (worktree, builder command, commit, answer).
Its key names the unit and the event that triggered the round, so a round runs once per
trigger however often the decision asks for it.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from projections.intents import Effect, IntentOf

BUILD = "build"
"""The key prefix of :class:`BuildRound`."""


class BuildRound(Effect, frozen=True, tag="builder.build_round.v1"):
    """One round for ``brief["unit"]`` as builder ``principal``, answering ``trigger``.

    ``brief``: the brief's skeleton as the decision read it from the folds (the shell adds
    what git says: the start commit's tree); ``asked``: the questions asked of the unit so
    far; ``conflict``: the trunk collision this round resolves (``finding``, ``head``)."""

    unit: str
    brief: dict[str, Any]
    principal: str
    trigger: str
    asked: dict[str, int]
    conflict: dict[str, str] | None = None

    @property
    def key(self) -> str:
        return f"{BUILD}:{self.project}:{self.unit}:{self.trigger}"


BuilderEffect = BuildRound
"""Every effect the builder asks for."""

BuilderIntent: TypeAlias = IntentOf[BuilderEffect]
"""What the builder may ask for (``decide``, ``perform``): publishing, and its own effects."""
