"""The charter daemon's effects: what its decision asks its shell to do.

One effect: read criterion tests' functions and ``loopbus.toml`` at a commit from git (see
:mod:`.reading`). Its key is the ``outside`` key the reading is kept under, so a commit is
read once while the reading is kept.
"""

from __future__ import annotations

from typing import TypeAlias

from projections.intents import Effect, IntentOf
from workers.charter.reading import reading_key


class ReadCriteria(Effect, frozen=True, tag="charter.read_criteria.v1"):
    """Read ``tests`` (pytest node ids) and the configuration at ``commit`` (empty: trunk)."""

    commit: str
    tests: tuple[str, ...]

    @property
    def key(self) -> str:
        return reading_key(self.project, self.commit)


CharterEffect = ReadCriteria
"""Every effect the charter daemon asks for."""

CharterIntent: TypeAlias = IntentOf[CharterEffect]
"""What the charter may ask for (``decide``, ``perform``): publishing, and its own effects."""
