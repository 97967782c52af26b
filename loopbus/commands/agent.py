"""``loopbus agent CLI --role ROLE [-- ARGS…]``: a headless coding-agent CLI as a loopbus agent.

Put it in ``loopbus.toml`` as the role's command (``[build] command = "loopbus agent
claude --role builder"``). It reads the role's document on stdin, prompts the CLI with
it, and prints the envelope the role's daemon expects (docs/agents.md, "Headless
coding-agent CLIs"). Words after ``--`` are passed to the CLI.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, cast

from loopbus.errors import UsageError

if TYPE_CHECKING:
    from loopbus.agents_cli.spec import Role


def register(sub: Any) -> None:
    from loopbus.agents_cli.spec import ROLES
    from loopbus.agents_cli.table import CLIS

    parser = sub.add_parser(
        "agent",
        help="run a headless coding-agent CLI (claude, codex, gemini, opencode) as an agent",
        description=(
            "Read a role's document on stdin, run the CLI headless with a prompt made from "
            "it, and print the role's envelope on stdout. Words after -- go to the CLI."
        ),
    )
    parser.add_argument("--role", choices=ROLES, help="the agent role (required)")
    # One REMAINDER holding CLI, a --role after it and `-- ARGS`: argparse would drop the
    # words after `--` once a positional before it matched (Python 3.11).
    parser.add_argument(
        "words",
        nargs=argparse.REMAINDER,
        metavar="CLI [--role ROLE] [-- ARG ...]",
        help=f"CLI is one of {', '.join(sorted(CLIS))}; words after -- go to it",
    )
    parser.set_defaults(handler=run)


def split(args: argparse.Namespace) -> tuple[str, Role, list[str]]:
    """The CLI, the role and the CLI's own words, wherever ``--role`` was given."""
    from loopbus.agents_cli.spec import ROLES
    from loopbus.cli import OneLineParser

    if not args.words or args.words[0].startswith("-"):
        raise UsageError("agent: name the CLI first: loopbus agent claude --role builder")
    cli, rest = args.words[0], list(args.words[1:])
    cut = rest.index("--") if "--" in rest else len(rest)
    head, extra = rest[:cut], rest[cut + 1 :]
    role = args.role
    if head:
        late = OneLineParser(prog="loopbus agent", add_help=False)
        late.add_argument("--role", choices=ROLES)
        role = late.parse_args(head).role or role
    if role is None:
        raise UsageError(f"agent: --role is required: one of {', '.join(ROLES)}")
    return cli, cast("Role", role), extra


def run(args: argparse.Namespace) -> int:
    from loopbus.agents_cli.run import run as run_agent

    cli, role, extra = split(args)
    if sys.stdin.isatty():
        raise UsageError(f"agent: pipe the {role}'s document (JSON) into stdin")
    out = run_agent(cli, role, extra, sys.stdin.buffer.read())
    sys.stdout.buffer.write(out + b"\n")
    sys.stdout.flush()
    return 0
