"""The lessons daemon's effect: close a slice out (git work, done by its shell).

:class:`CloseOut` deletes the unit branches of ``slice`` whose commits are on trunk and
removes their checkouts; keyed by the slice, so a slice is closed out once.
"""

from __future__ import annotations

from typing import TypeAlias

from projections.intents import Effect, IntentOf

CLOSEOUT = "closeout"
"""The key prefix of :class:`CloseOut`."""


class CloseOut(Effect, frozen=True, tag="lessons.close_out.v1"):
    """Collapse ``slice``'s unit branches and checkouts (``closed``: its close fact)."""

    slice: str
    closed: str
    units: list[str]

    @property
    def key(self) -> str:
        return f"{CLOSEOUT}:{self.project}:{self.slice}"


LessonsEffect = CloseOut
"""Every effect the lessons daemon asks for (one today)."""

LessonsIntent: TypeAlias = IntentOf[LessonsEffect]
"""What the lessons may ask for (``decide``, ``perform``): publishing, and its own effects."""
