"""The arguments of ``loopbus replay``; the command is ``loopbus.commands.replay``, imported
only when it runs (its ``--help`` must not import nats-py and the folds)."""

from __future__ import annotations

from typing import Any

from loopbus.commands import deferred
from loopbus.settings import add_connection, add_project


def register(sub: Any) -> None:
    parser = sub.add_parser("replay", help="fold the log from sequence 1 and show the state")
    add_connection(parser)
    add_project(parser)
    parser.add_argument(
        "--until",
        default=None,
        metavar="SEQ|TIME",
        help="stop after this stream sequence or ISO time (the state as it was then)",
    )
    parser.add_argument("--json", action="store_true", help="one document: events and state")
    parser.add_argument("--state-only", action="store_true", help="print the state only")
    parser.set_defaults(handler=deferred("replay"))
