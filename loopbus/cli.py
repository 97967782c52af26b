"""``loopbus``: the front door. Each command group lives in ``loopbus/commands/<name>.py``
and exposes ``register(subparsers)``; the parser a command registers sets ``handler``.

Conventions every command keeps (docs/cli.md compares them with git's and nats'):

* a user mistake ends as one line on stderr (``loopbus: error: …``) and exit 2; a refusal
  or an unreachable server as one line and exit 1; never a traceback;
* Ctrl-C exits 130, wherever it lands;
* ``--project`` defaults to ``$LOOPBUS_PROJECT``, then to the nearest ``loopbus.toml``;
* progress goes to stderr, and only when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as distribution_version
from typing import NoReturn

from loopbus.errors import INTERRUPTED

COMMANDS = (
    "init",
    "demo",
    "up",
    "report",
    "approve",
    "charter",
    "run",
    "creds",
    "tail",
    "replay",
    "status",
    "page",
    "worker",
    "provision",
    "plan",
    "decide",
    "trunk",
    "config",
    "record",
    "gate",
    "findings",
    "finding",
    "decision",
    "merge-driver",
    "agent",
    "completion",
)
"""Modules under ``loopbus.commands``, in the order ``loopbus --help`` lists them."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line naming the problem and where to look."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def version() -> str:
    try:
        return distribution_version("loopbus")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def build_parser() -> argparse.ArgumentParser:
    from loopbus.examples import attach

    parser = OneLineParser(
        prog="loopbus",
        description="Event-sourced backbone for autonomous build loops, on NATS JetStream.",
    )
    parser.add_argument("--version", action="version", version=f"loopbus {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.required = True
    for name in COMMANDS:
        module = importlib.import_module(f"loopbus.commands.{name.replace('-', '_')}")
        module.register(sub)
    attach(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # while importing, parsing or running: the same exit
        return INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    from loopbus.bus import BusError
    from loopbus.errors import LoopbusError
    from loopbus.schemas import SchemaError
    from loopbus.settings import resolve_project

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        resolve_project(args)
        return int(args.handler(args))
    except LoopbusError as exc:
        return _fail(str(exc), exc.exit_code)
    except (BusError, SchemaError) as exc:
        return _fail(str(exc), 1)
    except BrokenPipeError:  # `loopbus tail | head` is not an error
        return 0


def _fail(message: str, code: int) -> int:
    print(f"loopbus: error: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
