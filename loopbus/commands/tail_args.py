"""The arguments of ``loopbus tail``; the command is ``loopbus.commands.tail``, imported only
when it runs (``tail --help`` must not import nats-py)."""

from __future__ import annotations

import argparse
from typing import Any

from loopbus.commands import deferred
from loopbus.completion import offer
from loopbus.settings import add_connection, add_project
from schemas import KINDS, PRODUCERS


def register(sub: Any) -> None:
    parser = sub.add_parser("tail", help="follow findings and transitions live")
    add_connection(parser)
    add_filters(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("--no-follow", action="store_true", help="print what is there now and exit")
    parser.set_defaults(handler=deferred("tail"))


def add_filters(parser: argparse.ArgumentParser) -> None:
    scope = parser.add_mutually_exclusive_group()
    add_project(scope, required=False, help="only this project")
    scope.add_argument(
        "--all-projects",
        action="store_true",
        help="every project, even when a default project is set (each line names its project)",
    )
    offer(
        parser.add_argument("--producer", default=None, help="only findings from this producer"),
        PRODUCERS,
    )
    parser.add_argument("--unit", default=None, help="only events about this unit")
    offer(
        parser.add_argument(
            "--kind", default=None, help="only this kind or family (finding, unit, verdict …)"
        ),
        sorted({k.split(".")[0] for k in KINDS}),
    )
    parser.add_argument(
        "--since",
        default=None,
        metavar="SEQ|DURATION|TIME",
        help="start at a stream sequence, a duration ago (10m) or an ISO time",
    )
