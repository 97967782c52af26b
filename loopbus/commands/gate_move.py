"""``loopbus gate move``: claim a move of a gate along the ratchet.

It publishes a :class:`loopbus.schemas.ratchet.GateMoveClaim` on the claimant's claim
subject and, with ``--wait``, waits for the ratchet daemon's answer: the ``gate.moved.v1``
fact (with the decision that records it) or the finding that refuses it, naming the
authority the move needs. The CLI writes no fact and judges nothing: who may make a move
is the daemon's to settle, so a claim from the wrong seat reaches the log and is refused
there, on the record.
"""

from __future__ import annotations

import argparse
from typing import Any, get_args

from loopbus.answers import claim_and_wait
from loopbus.commands.report import add_claimant, principal
from loopbus.completion import offer
from loopbus.errors import UsageError
from loopbus.known import add_new
from loopbus.projections.lifecycle import ANSWERS_CLAIM
from loopbus.schemas import Actor, FindingRaised, InvalidValue, Role
from loopbus.schemas.ids import is_token
from loopbus.schemas.ratchet import GATE_MOVES, SCOPES, GateMoveClaim, GateMoved
from loopbus.settings import add_connection, add_project

CLAIMANT_ROLES: tuple[str, ...] = tuple(r for r in get_args(Role) if r != "system")
OPTIONS = {"gate": "--gate", "why": "--why", "check": "--check", "every": "--every"}


def register(actions: Any) -> None:
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
        "--wait", type=float, default=0.0, metavar="S", help="wait for the system's answer"
    )
    add_new(parser, "this gate move (a catalogue's or project's first event)")
    parser.set_defaults(handler=run)


def build(args: argparse.Namespace) -> GateMoveClaim:
    if not is_token(args.project):
        raise UsageError(f"--project {args.project!r} is not a valid project id")
    for option, value, allowed in (
        ("--move", args.move, GATE_MOVES),
        ("--scope", args.scope, SCOPES),
        ("--role", args.role, CLAIMANT_ROLES),
    ):
        if value not in allowed:
            raise UsageError(f"{option} {value!r} is not one of: {', '.join(allowed)}")
    if not is_token(args.gate):
        raise UsageError(
            f"--gate {args.gate!r} is not a gate id (letters, digits, '_' or '-', at most 64)"
        )
    try:
        return GateMoveClaim(
            project=args.project,
            actor=Actor(role=args.role, principal=principal(args)),
            gate=args.gate,
            scope=args.scope,
            move=args.move,
            why=args.why,
            check=args.check,
            defect=args.defect,
            every=args.every,
        )
    except InvalidValue as exc:
        option = OPTIONS.get(exc.field, exc.field)
        given = "is missing" if exc.value is None else repr(exc.value)
        raise UsageError(f"{option} {given}: {exc.hint}") from exc


def run(args: argparse.Namespace) -> int:
    # An operator claims with the operator credential, every other role with the agent's.
    args.creds_role = "operator" if args.role == "operator" else "agent"
    claim = build(args)

    return claim_and_wait(
        args,
        claim,
        lambda seq: (
            f"{claim.move} of {claim.scope} gate {claim.gate} claimed at seq {seq} ({claim.id})"
        ),
        lambda event: _answer(event, claim),
    )


def _answer(event: object, claim: GateMoveClaim) -> str | None:
    match event:
        case GateMoved(claim=answered) if answered == claim.id:
            source = event.source or "nothing"
            target = event.target or "gone"
            return (
                f"moved: {event.scope} gate {event.gate} {source} -> {target} by "
                f"{event.authority} (decision {event.decision})"
            )
        case FindingRaised(evidence=evidence) if evidence.get(ANSWERS_CLAIM) == claim.id:
            return event.message
    return None
