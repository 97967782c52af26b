"""What a CLI module gives the wrapper: how to call the CLI and how to read what it printed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

Role = Literal["builder", "reviewer", "planner", "investigator"]
ROLES: tuple[Role, ...] = ("builder", "reviewer", "planner", "investigator")

EDITS: frozenset[str] = frozenset({"builder"})
"""Roles whose agent changes files: the others get the CLI's read-only mode."""


def unless_given(extra: Sequence[str], flags: tuple[str, ...], default: list[str]) -> list[str]:
    """``default`` words, unless the user's own words after ``--`` already set one of
    ``flags`` (a CLI may refuse a flag given twice, and the user's choice wins)."""
    given = any(word == flag or word.startswith(flag + "=") for word in extra for flag in flags)
    return [] if given else default


class OutputError(Exception):
    """Raised by a parser when the CLI's output is not in its documented format, or says
    the run failed; the message is one line."""


@dataclass(frozen=True, slots=True)
class Invocation:
    """How to run the CLI once: its words, and the text it reads on stdin (the prompt,
    which may be larger than one argument may be)."""

    argv: list[str]
    stdin: str


@dataclass(frozen=True, slots=True)
class Answer:
    """What the CLI's output says: the agent's final message and the tokens it reported."""

    text: str
    tokens_in: int = 0
    tokens_out: int = 0

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out


@dataclass(frozen=True, slots=True)
class Cli:
    """One headless coding-agent CLI: ``invoke(prompt, role, extra)`` builds its call (``extra``
    is what followed ``--`` on the wrapper's command line), ``parse(stdout)`` reads its
    structured output. ``install`` says how to get the program; ``format_doc`` where the
    output format implemented here is documented."""

    name: str
    program: str
    install: str
    format_doc: str
    invoke: Callable[[str, Role, Sequence[str]], Invocation]
    parse: Callable[[str], Answer]
