"""Errors of the reviewer and investigator. Each prints as one line naming what to fix."""

from __future__ import annotations


class ReviewError(Exception):
    """Root of every reviewer/investigator error."""


class ReviewConfigError(ReviewError):
    """Raised when the ``[review]`` or ``[investigator]`` table of ``loopbus.toml`` is wrong."""

    def __init__(self, field: str, value: object, hint: str) -> None:
        shown = "is missing" if value is None else f"= {value!r} is not valid"
        super().__init__(f"loopbus.toml: {field} {shown}: {hint}")
        self.field = field
        self.value = value
        self.hint = hint


class RepoError(ReviewError):
    """Raised when the repository cannot answer: an unknown commit, no common base."""
