"""``loopbus gate move``: claim a move of a gate along the ratchet.

It publishes a :class:`schemas.ratchet.GateMoveClaim` on the claimant's claim
subject and, with ``--wait``, waits for the ratchet daemon's answer: the ``gate.moved.v1``
fact (with the decision that records it) or the finding that refuses it, naming the
authority the move needs. The CLI writes no fact and judges no authority: who may make a
move is the daemon's to settle, so a claim from the wrong seat reaches the log and is
refused there, on the record. What it does refuse, before publishing, is a move other than
``draft`` of a gate the project does not have (:func:`loopbus.known_work.require_gate`).
"""

from __future__ import annotations

import argparse

from loopbus.answers import claim_and_wait
from loopbus.commands.gate_args import CLAIMANT_ROLES
from loopbus.commands.report import principal
from loopbus.errors import UsageError
from loopbus.known_work import require_gate
from projections.lifecycle import ANSWERS_CLAIM
from schemas import Actor, FindingRaised, InvalidValue
from schemas.ids import is_token
from schemas.ratchet import GATE_MOVES, SCOPES, GateMoveClaim, GateMoved

OPTIONS = {"gate": "--gate", "why": "--why", "check": "--check", "every": "--every"}


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
        # Only a draft starts a gate; any other move of a gate the project does not have
        # could only be refused by the ratchet daemon, after "claimed" was printed.
        None
        if claim.move == "draft"
        else (lambda bus: require_gate(bus, claim.project, claim.scope, claim.gate)),
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
