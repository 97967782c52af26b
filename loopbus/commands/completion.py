"""``loopbus completion bash|zsh|fish``: print the shell completion script.

The script is generated from the very parser ``loopbus`` runs with (see
:mod:`loopbus.completion`), so it completes every command and option that exists.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from loopbus.completion import SHELLS, script


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "completion",
        help="print the shell completion script for bash, zsh or fish",
        description="Print a completion script for SHELL on stdout; load it from your "
        "shell's start-up file (see docs/cli.md).",
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete for")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from loopbus.cli import build_parser, version  # the parser this command is part of

    sys.stdout.write(script(args.shell, build_parser(), version()))
    return 0
