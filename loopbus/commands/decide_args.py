"""The arguments of ``loopbus decide``; the command is ``loopbus.commands.decide``,
imported only when it runs."""

from __future__ import annotations

from typing import Any

from loopbus.commands import deferred
from loopbus.commands.report_args import add_claimant
from loopbus.seconds import seconds
from loopbus.settings import add_connection, add_project


def register(sub: Any) -> None:
    text = "settle a builder's novel decision that waits on the operator"
    parser = sub.add_parser("decide", help=text, description=text)
    add_connection(parser, role="operator")
    add_claimant(parser)
    add_project(parser)
    parser.add_argument("--unit", required=True, help="the unit whose builder asked")
    parser.add_argument("--decision", required=True, help="the decision id it asked")
    answer = parser.add_mutually_exclusive_group(required=True)
    answer.add_argument("--choose", help="the option id to take")
    answer.add_argument(
        "--confirm",
        action="store_true",
        help="confirm the option long mode picked alone (so the unit may merge)",
    )
    parser.add_argument("--why", default="", help="the operator's rationale (recorded)")
    parser.add_argument(
        "--wait",
        type=seconds(hint="leave --wait out not to wait"),
        default=None,
        metavar="SECONDS",
        help="wait this long for the decision to be recorded and print it",
    )
    parser.set_defaults(handler=deferred("decide"))
