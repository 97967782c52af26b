"""The arguments of ``loopbus run``; the command is ``loopbus.commands.run``, imported
only when it runs (its ``--help`` must not import nats-py and the folds)."""

from __future__ import annotations

from typing import Any

from loopbus.commands import deferred
from loopbus.commands.report_args import add_claimant
from loopbus.settings import add_connection, add_project


def register(sub: Any) -> None:
    text = "the run of the charter in force: state, slices, criteria held, budgets spent"
    parser = sub.add_parser("run", help=text, description=text)
    add_connection(parser, role="operator")
    add_claimant(parser)
    add_project(parser)
    parser.add_argument("--stop", action="store_true", help="end the run now (operators)")
    parser.add_argument("--why", default=None, help="why the run is stopped (with --stop)")
    parser.add_argument(
        "--json", action="store_true", help="one JSON document (with --stop: the stop's claim)"
    )
    parser.set_defaults(handler=deferred("run"))
