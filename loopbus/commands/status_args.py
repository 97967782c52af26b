"""The arguments of ``loopbus status``; the command is ``loopbus.commands.status``, imported
only when it runs (``status --help`` must not import nats-py and every fold)."""

from __future__ import annotations

from typing import Any

from loopbus.commands import deferred
from loopbus.settings import add_connection, add_project

DEFAULT_LIMIT = 100


def register(sub: Any) -> None:
    parser = sub.add_parser("status", help="the current state, from the materialised view")
    add_connection(parser)
    add_project(parser)
    parser.add_argument("--json", action="store_true", help="one JSON document")
    parser.add_argument(
        "--waiting",
        action="store_true",
        help="only what the run is waiting on: blocked units grouped by subject",
    )
    parser.add_argument(
        "--unit", default=None, help="one unit: its rounds, finding sets, verdict and rung"
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        help="show at most N entries of each collection (units, open findings, …); "
        "0 shows everything (default %(default)s)",
    )
    parser.set_defaults(handler=deferred("status"))
