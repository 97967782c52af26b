"""The arguments of ``loopbus gate run|move``; the commands are ``loopbus.commands.gate``
and ``loopbus.commands.gate_move``, each imported only when it runs (the runner, its
signing keys and git are not needed to print the help)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, get_args

from loopbus.commands import deferred
from loopbus.commands.report_args import add_claimant
from loopbus.completion import offer
from loopbus.known import add_new
from loopbus.seconds import seconds
from loopbus.settings import add_connection, add_project
from schemas.envelope import Role
from schemas.ratchet import GATE_MOVES, SCOPES
from workers.gates.key_names import DEFAULT_NAME, KEY_DIR_ENV

CLAIMANT_ROLES: tuple[str, ...] = tuple(r for r in get_args(Role) if r != "system")
"""Who may claim a gate move (``--role``): every role but the system's."""


def register(sub: Any) -> None:
    gate = sub.add_parser(
        "gate", help="run a commit's gates (cached, signed, three outcomes); claim a ratchet move"
    )
    actions = gate.add_subparsers(dest="gate_action", metavar="ACTION", parser_class=type(gate))
    actions.required = True
    run_parser = actions.add_parser(
        "run", help="run every check (or --check) on a commit and print each outcome"
    )
    # Gate results are facts: only the system credential may publish them (docs/security.md).
    add_connection(run_parser, role="system")
    run_parser.add_argument(
        "--repo",
        type=Path,
        default=Path(os.environ.get("LOOPBUS_REPO", ".")),
        help="the repository (default: $LOOPBUS_REPO, else the current directory)",
    )
    run_parser.add_argument("--commit", default=None, metavar="SHA", help="default: HEAD")
    run_parser.add_argument(
        "--check", action="append", default=[], metavar="ID", help="only this check (repeatable)"
    )
    run_parser.add_argument("--json", action="store_true", help="one JSON object per check")
    run_parser.add_argument(
        "--force", action="store_true", help="run even when a cached pass or fail exists"
    )
    run_parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help=f"loopbus up's data directory: the runner key is kept in DATA_DIR/keys and the "
        f"system credential read from DATA_DIR/creds (default: the key in ${KEY_DIR_ENV}, "
        "else $XDG_DATA_HOME/loopbus/keys, else ~/.local/share/loopbus/keys)",
    )
    run_parser.add_argument("--runner-name", default=DEFAULT_NAME, help="key name")
    run_parser.add_argument("--jobs", type=int, default=2, help="checks run at once (default 2)")
    run_parser.set_defaults(handler=deferred("gate"))
    register_move(actions)


def register_move(actions: Any) -> None:
    """Add ``move`` to ``loopbus gate``'s actions."""
    text = "claim a move of a gate along the ratchet (the ratchet daemon settles it)"
    parser = actions.add_parser("move", help=text, description=text)
    add_connection(parser, role="operator")
    add_project(parser)
    add_claimant(parser)
    parser.add_argument("--gate", required=True, help="the gate: a check id, or a profile name")
    offer(parser.add_argument("--move", required=True, help=", ".join(GATE_MOVES)), GATE_MOVES)
    offer(
        parser.add_argument("--scope", default="local", help="local (default) or profile"),
        SCOPES,
    )
    offer(
        parser.add_argument(
            "--role",
            default="operator",
            help="who claims: operator (default), standards, builder, … (the credential's)",
        ),
        CLAIMANT_ROLES,
    )
    parser.add_argument("--why", required=True, help="why, in a sentence")
    parser.add_argument("--check", default="", help="the check added or edited")
    parser.add_argument("--defect", default="", help="the class of mistake a drafted gate catches")
    parser.add_argument(
        "--every", type=int, default=None, metavar="N", help="the new review cadence N"
    )
    parser.add_argument(
        "--wait",
        type=seconds(hint="leave --wait out not to wait"),
        default=None,
        metavar="S",
        help="wait for the system's answer",
    )
    add_new(parser, "this gate move (a catalogue's or project's first event)")
    parser.set_defaults(handler=deferred("gate_move"))
