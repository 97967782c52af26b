"""The CLIs ``loopbus agent`` knows: one row each. A new CLI is a module like
``claude.py`` (an argv builder and an output parser) and one row here."""

from __future__ import annotations

from loopbus.agents_cli import claude, codex, gemini, opencode
from loopbus.agents_cli.spec import Cli

CLIS: dict[str, Cli] = {
    "claude": claude.CLI,
    "codex": codex.CLI,
    "gemini": gemini.CLI,
    "opencode": opencode.CLI,
}
