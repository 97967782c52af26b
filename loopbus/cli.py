"""``loopbus``: the front door. Each command group lives in ``loopbus/commands/<name>.py``
and exposes ``register(subparsers)``; the parser a command registers sets ``handler``.

Every user mistake ends as one line on stderr (``loopbus: error: …``), never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from loopbus.bus import BusError
from loopbus.errors import LoopbusError
from loopbus.schemas import SchemaError

COMMANDS = (
    "up",
    "report",
    "tail",
    "replay",
    "status",
    "worker",
    "provision",
    "plan",
    "record",
    "gate",
    "merge-driver",
)
"""Modules under ``loopbus.commands``, in the order ``loopbus --help`` lists them."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line naming the problem and where to look."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="loopbus",
        description="Event-sourced backbone for autonomous build loops, on NATS JetStream.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.required = True
    for name in COMMANDS:
        module = importlib.import_module(f"loopbus.commands.{name.replace('-', '_')}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except LoopbusError as exc:
        return _fail(str(exc), exc.exit_code)
    except (BusError, SchemaError) as exc:
        return _fail(str(exc), 1)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `loopbus tail | head` is not an error
        return 0


def _fail(message: str, code: int) -> int:
    print(f"loopbus: error: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
