"""The arguments of ``loopbus finding dismiss|resolve|reopen``; the command is
``loopbus.commands.finding``, imported only when it runs."""

from __future__ import annotations

from typing import Any

from loopbus.commands import deferred
from loopbus.commands.report_args import add_claimant
from loopbus.seconds import seconds
from loopbus.settings import add_connection, add_project
from schemas.lifecycle import DISMISS_REASONS


def register(sub: Any) -> None:
    group = sub.add_parser("finding", help="dismiss, resolve or reopen a finding (operator)")
    actions = group.add_subparsers(dest="finding_action", metavar="ACTION")
    actions.required = True
    for action, text in (
        ("dismiss", "close a finding as a false positive, won't-fix or duplicate"),
        ("resolve", "close a finding as dealt with"),
        ("reopen", "open a closed finding again"),
    ):
        parser = actions.add_parser(action, help=text, description=text)
        add_connection(parser, role="operator")
        add_project(parser)
        add_claimant(parser)
        parser.add_argument("--id", required=True, dest="finding", help="the finding's id")
        if action == "dismiss":
            parser.add_argument(
                "--as", dest="reason", required=True, help=", ".join(DISMISS_REASONS)
            )
        parser.add_argument("--why", required=True, help="why, in a sentence")
        parser.add_argument(
            "--wait",
            type=seconds(hint="leave --wait out not to wait"),
            default=None,
            metavar="S",
            help="wait for the system's answer",
        )
        parser.set_defaults(handler=deferred("finding"), action=action)
