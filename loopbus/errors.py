"""Errors the CLI prints as one line (never a traceback): a user's mistake or a refusal."""

from __future__ import annotations


class LoopbusError(Exception):
    """Root of CLI errors: printed as ``loopbus: error: …`` with exit code 1."""

    exit_code = 1


class UsageError(LoopbusError):
    """Raised for bad arguments or input: names the option, the value and the fix; exit 2."""

    exit_code = 2
