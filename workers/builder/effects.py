"""The builder's effects: what its decision asks its shell to do.

One effect: run one build round of a unit (worktree, builder command, commit, answer).
Its key names the unit and the event that triggered the round, so a round runs once per
trigger however often the decision asks for it.
"""

from __future__ import annotations

from typing import TypeAlias

import msgspec

from projections.builds import Collision
from projections.intents import Effect, IntentOf
from schemas.builds import BriefDecision, BriefFinding, BriefSuperseded

BUILD = "build"
"""The key prefix of :class:`BuildRound`."""


class RoundBrief(msgspec.Struct, frozen=True, kw_only=True):
    """The brief's skeleton as the decision reads it from the folds: a
    :class:`schemas.builds.Brief` but for what git says at ``start`` (the criteria's test
    text, the design document), which the shell adds. A Struct, not a dict, so that a key
    misspelt by the decision or the shell is a type error, not a missing field at run time."""

    project: str
    slice: str
    unit: str
    title: str = ""
    files: list[str] = []
    criteria: list[str] = []
    """The criteria's pytest node ids (the shell reads each one's text)."""
    design_ref: str | None = None
    start: str | None = None
    """The commit the round starts from (``None``: trunk's, read by the shell)."""
    round: int = 1
    findings: list[BriefFinding] = []
    rung: int = 0
    tactic: str = ""
    decisions: list[BriefDecision] = []
    superseded: list[BriefSuperseded] = []
    lessons: list[str] = []
    problem: str = ""


class BuildRound(Effect, frozen=True, tag="builder.build_round.v1"):
    """One round for ``unit`` as builder ``principal``, answering ``trigger``.

    ``asked``: how often each question was asked of the unit so far; ``conflict``: the
    trunk collision this round resolves (a copy: the fold keeps its own)."""

    unit: str
    brief: RoundBrief
    principal: str
    trigger: str
    asked: dict[str, int]
    conflict: Collision | None = None

    @property
    def key(self) -> str:
        return f"{BUILD}:{self.project}:{self.unit}:{self.trigger}"


BuilderEffect = BuildRound
"""Every effect the builder asks for."""

BuilderIntent: TypeAlias = IntentOf[BuilderEffect]
"""What the builder may ask for (``decide``, ``perform``): publishing, and its own effects."""
