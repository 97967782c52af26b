"""The arguments of ``loopbus approve``. What is approved is one of a mutually exclusive
group of options: ``--unit`` (``loopbus.commands.approve``) and each other kind, run by a
module of its own (:data:`KINDS`), imported only when the command runs."""

from __future__ import annotations

import argparse
from typing import Any

from loopbus.commands import deferred
from loopbus.commands.report_args import add_claimant
from loopbus.settings import add_connection, add_project

KINDS: dict[str, str] = {
    "charter": "approve_charter",
    "plan": "approve_plan",
    "skeleton": "approve_skeleton",
    "config": "approve_config",
}
"""The other things an operator approves: the ``args`` attribute that is not ``None`` when
its option was given -> the module under ``loopbus.commands`` that runs it."""


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "approve",
        help="approve a unit for merge, a charter, a proposed plan, a skeleton or a "
        "configuration proposal (operators)",
    )
    add_connection(parser, role="operator")
    add_claimant(parser)
    add_project(parser)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--unit", help="the unit to approve for merge")
    for add_option in (_charter_option, _plan_option, _skeleton_option, _config_option):
        add_option(what)
    parser.add_argument("--why", required=True, help="why it is approved (kept on the log)")
    parser.add_argument(
        "--head", default="", help="the commit approved (default: the unit's current head)"
    )
    parser.add_argument(
        "--wait",
        action="store_true",
        help="wait until the system answers the approval (approved, or refused and why)",
    )
    parser.set_defaults(handler=dispatch)


def _charter_option(group: Any) -> None:
    group.add_argument(
        "--charter",
        nargs="?",
        const="",
        default=None,
        metavar="ID",
        help="approve the charter awaiting approval (ID: check it is that one); its run starts",
    )


def _plan_option(group: Any) -> None:
    """Add ``--plan`` to ``approve``'s group of targets."""
    group.add_argument(
        "--plan", metavar="SLICE", help="approve the plan the planner proposed for SLICE"
    )


def _skeleton_option(group: Any) -> None:
    group.add_argument(
        "--skeleton",
        metavar="SLICE",
        nargs="?",
        const="",
        default=None,
        help="approve the closed skeleton slice (SLICE, or the one waiting)",
    )


def _config_option(group: Any) -> None:
    """``--config ID`` in ``loopbus approve``'s group of what is approved."""
    group.add_argument(
        "--config",
        metavar="PROPOSAL",
        default=None,
        help="approve a configuration proposal by its id (loopbus config propose printed it)",
    )


def dispatch(args: argparse.Namespace) -> int:
    for option, module in KINDS.items():
        if getattr(args, option, None) is not None:
            return deferred(module)(args)
    return deferred("approve")(args)
