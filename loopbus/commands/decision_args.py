"""The arguments of ``loopbus decision record|supersede|objective|show|list``; the command
is ``loopbus.commands.decision``, imported only when it runs."""

from __future__ import annotations

from typing import Any

from loopbus.commands import deferred
from loopbus.commands.report_args import add_claimant
from loopbus.known import add_new
from loopbus.seconds import seconds
from loopbus.settings import add_connection, add_project


def register(sub: Any) -> None:
    group = sub.add_parser("decision", help="record, supersede, show or list durable decisions")
    actions = group.add_subparsers(dest="decision_action", metavar="ACTION")
    actions.required = True
    for action, text in (
        ("record", "record a decision (an operator's claim the system records)"),
        ("supersede", "record a decision that replaces one in force"),
    ):
        parser = _parser(actions, action, text, claimant=True)
        if action == "supersede":
            parser.add_argument("--id", required=True, dest="supersedes", help="decision replaced")
        else:
            add_new(parser, "this decision")
        parser.add_argument("--question", required=action == "record", default=None)
        parser.add_argument("--chosen", required=True, help="the answer chosen")
        parser.add_argument("--option", action="append", default=[], help="an option weighed")
        parser.add_argument("--owner", default="operator", help="the decision's one owner")
        parser.add_argument("--serves", default="", help="the charter objective it serves")
        parser.add_argument("--evidence", action="append", default=[], help="what it rests on")
        parser.add_argument("--rationale", default="")
        parser.add_argument("--confidence", type=float, default=1.0, help="0..1")
        parser.add_argument("--file", action="append", default=[], help="a path it bears on")
        parser.add_argument("--criterion", action="append", default=[], help="a criterion")
        parser.add_argument("--slice", default=None, help="the slice it bears on")
        parser.add_argument(
            "--wait",
            type=seconds(hint="leave --wait out not to wait"),
            default=None,
            metavar="S",
            help="wait for it",
        )
        parser.set_defaults(handler=deferred("decision", "run_record"), action=action)
    objective = _parser(actions, "objective", "declare or withdraw a charter objective", True)
    objective.add_argument("--id", required=True, dest="objective", help="the objective's id")
    objective.add_argument("--text", default="", help="what it is, in a sentence")
    objective.add_argument("--withdraw", action="store_true", help="it is no longer live")
    add_new(objective, "this objective")
    objective.set_defaults(handler=deferred("decision", "run_objective"))
    show = _parser(actions, "show", "one decision: the record, its chain, who was briefed")
    show.add_argument("--id", required=True, dest="decision", help="the decision's id")
    show.add_argument("--json", action="store_true", help="one JSON document")
    show.set_defaults(handler=deferred("decision", "run_show"))
    listing = _parser(actions, "list", "the decisions in force (--all: every record)")
    listing.add_argument("--all", action="store_true", help="superseded decisions too")
    listing.add_argument("--json", action="store_true", help="one JSON document")
    listing.set_defaults(handler=deferred("decision", "run_list"))


def _parser(actions: Any, name: str, text: str, claimant: bool = False) -> Any:
    parser = actions.add_parser(name, help=text, description=text)
    # A record or a supersession is the operator's claim; show and list only read.
    add_connection(parser, role="operator" if claimant else "reader")
    add_project(parser)
    if claimant:
        add_claimant(parser)
    return parser
