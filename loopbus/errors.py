"""Errors the CLI prints as one line (never a traceback): a user's mistake or a refusal."""

from __future__ import annotations

INTERRUPTED = 130
"""The exit status of a command stopped by Ctrl-C (128 + SIGINT), as a shell reports it."""


class LoopbusError(Exception):
    """Root of CLI errors: printed as ``loopbus: error: …`` with exit code 1."""

    exit_code = 1


class UsageError(LoopbusError):
    """Raised for bad arguments or input: names the option, the value and the fix; exit 2."""

    exit_code = 2


class PlanRefused(LoopbusError):
    """Raised when a plan does not stand; printed one problem a line."""

    def __init__(self, source: str, problems: list[str]):
        super().__init__(f"{source}: {len(problems)} problems")
        self.source = source
        self.problems = problems
