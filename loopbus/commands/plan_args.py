"""The arguments of ``loopbus plan check|submit``; the command is ``loopbus.commands.plan``,
imported only when it runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopbus.commands import deferred
from loopbus.commands.report_args import add_claimant
from loopbus.seconds import seconds
from loopbus.settings import add_connection, add_project

DEFAULT_WAIT_S = 30.0
"""How long ``plan submit`` waits for the dispatcher by default: it answers in well under a
second when it runs, so this only bounds the wait when none does."""


def register(sub: Any) -> None:
    parser = sub.add_parser("plan", help="check or submit a slice plan")
    verbs = parser.add_subparsers(dest="plan_verb", metavar="VERB")
    verbs.required = True

    check = verbs.add_parser("check", help="validate a plan and show its waves and order")
    check.add_argument("plan", type=Path, help="plan file (TOML, or JSON when *.json)")
    check.add_argument(
        "--repo", type=Path, default=None, help="also check the pending criteria of PATH"
    )
    check.add_argument("--json", action="store_true", help="print one JSON document")
    check.set_defaults(handler=deferred("plan", "run_check"))

    submit = verbs.add_parser("submit", help="publish a plan as a planner's claim")
    submit.add_argument("plan", type=Path, help="plan file (TOML, or JSON when *.json)")
    add_project(submit)
    submit.add_argument(
        "--as",
        dest="role",
        choices=("planner", "operator"),
        default="planner",
        help="the role claiming (default %(default)s)",
    )
    waiting = submit.add_mutually_exclusive_group()
    waiting.add_argument(
        "--wait",
        type=seconds(hint="--no-wait does not wait"),
        default=DEFAULT_WAIT_S,
        metavar="SECONDS",
        help="how long to wait for the dispatcher's answer (default %(default)gs)",
    )
    waiting.add_argument(
        "--no-wait",
        action="store_true",
        help="publish the plan and exit without waiting for the answer",
    )
    submit.add_argument(
        "--new",
        action="store_true",
        help="the project is new (without it, a project with no event on the log is refused)",
    )
    add_claimant(submit)
    add_connection(submit, role="agent")
    submit.set_defaults(handler=deferred("plan", "run_submit"))
