"""The arguments of ``loopbus charter submit|show``; the command is
``loopbus.commands.charter``, imported only when it runs."""

from __future__ import annotations

from typing import Any

from loopbus.commands import deferred
from loopbus.commands.report_args import add_claimant
from loopbus.known import add_new
from loopbus.settings import add_connection, add_project


def register(sub: Any) -> None:
    parser = sub.add_parser("charter", help="what a run is for, and what it may spend")
    verbs = parser.add_subparsers(dest="charter_verb", metavar="VERB")
    verbs.required = True
    text = "submit a charter file (TOML, or Markdown with +++ TOML front matter) for approval"
    submit = verbs.add_parser("submit", help=text, description=text)
    add_connection(submit, role="operator")
    add_claimant(submit)
    add_project(submit)
    add_new(submit, "the charter")
    submit.add_argument("file", metavar="FILE", help="the charter file")
    submit.add_argument(
        "--check", action="store_true", help="only read the file and say whether it stands"
    )
    submit.set_defaults(handler=deferred("charter", "run_submit"))
    text = "print the charter in force and the one awaiting approval"
    show = verbs.add_parser("show", help=text, description=text)
    add_connection(show)
    add_project(show)
    show.add_argument("--json", action="store_true", help="one JSON document")
    show.set_defaults(handler=deferred("charter", "run_show"))
