"""Errors raised by the projections layer (pure code over events and plan text).

One root, :class:`ProjectionError`. It subclasses :class:`schemas.SchemaError`:
what the projections refuse is input that does not make a valid loopbus document, and the
CLI prints both the same way (one line each, never a traceback).
"""

from collections.abc import Sequence

from schemas.errors import SchemaError


class ProjectionError(SchemaError):
    """Root of every projections error."""


class PlanInvalid(ProjectionError):
    """Raised when plan text cannot be read as a plan; ``problems`` has one line each."""

    def __init__(self, problems: Sequence[str]):
        super().__init__("; ".join(problems))
        self.problems = list(problems)
