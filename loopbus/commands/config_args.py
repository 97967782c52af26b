"""The arguments of ``loopbus config adopt|propose``; the commands are
``loopbus.commands.config`` and ``loopbus.commands.config_propose``, each imported only when
it runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopbus.commands import deferred
from loopbus.commands.report_args import add_claimant
from loopbus.settings import add_connection, add_project


def register(sub: Any) -> None:
    parser = sub.add_parser("config", help="the configuration that judges trunk (operators)")
    verbs = parser.add_subparsers(dest="config_verb", metavar="VERB")
    verbs.required = True
    text = "adopt a commit's loopbus.toml as the configuration that judges trunk (operators)"
    adopt = verbs.add_parser("adopt", help=text, description=text)
    add_connection(adopt, role="operator")
    add_claimant(adopt)
    add_project(adopt)
    adopt.add_argument(
        "--commit",
        default="",
        help="the full sha of the commit whose loopbus.toml to adopt (default: trunk as the "
        "merger last gated it, read from the log and printed)",
    )
    adopt.add_argument("--why", required=True, help="why (kept on the log with the adoption)")
    adopt.set_defaults(handler=deferred("config"))
    register_propose(verbs)


def register_propose(verbs: Any) -> None:
    text = "propose a new loopbus.toml for trunk; it lands once approved (operators)"
    propose = verbs.add_parser("propose", help=text, description=text)
    add_connection(propose, role="operator")
    add_claimant(propose)
    add_project(propose)
    propose.add_argument("--file", type=Path, required=True, help="the whole proposed loopbus.toml")
    propose.add_argument("--why", required=True, help="why (kept on the log with the proposal)")
    propose.set_defaults(handler=deferred("config_propose"))
