"""The arguments of ``loopbus record``; the command is ``loopbus.commands.record``, imported
only when it runs (its ``--help`` must not import nats-py and the folds)."""

from __future__ import annotations

from typing import Any

from loopbus.commands import deferred
from loopbus.settings import add_connection, add_project


def register(sub: Any) -> None:
    parser = sub.add_parser("record", help="the run record of a project, from the log")
    add_connection(parser)
    add_project(parser)
    parser.add_argument("--slice", default=None, help="only this slice")
    parser.add_argument("--json", action="store_true", help="one JSON document")
    parser.set_defaults(handler=deferred("record"))
