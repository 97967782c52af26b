"""``loopbus finding dismiss|resolve|reopen``: an operator's claims about one finding.

Each publishes a :class:`schemas.lifecycle.FindingClaim` on the operator's claim
subject and, with ``--wait``, waits for the ratchet daemon's answer: the fact (dismissed,
resolved, reopened) or the finding that refuses it. The CLI writes no fact itself.
"""

from __future__ import annotations

import argparse

from loopbus.answers import claim_and_wait
from loopbus.commands.report import principal
from loopbus.errors import UsageError
from projections.lifecycle import ANSWERS_CLAIM
from schemas import Actor, FindingRaised, FindingResolved, InvalidValue
from schemas.ids import is_token
from schemas.lifecycle import (
    DISMISS_REASONS,
    FindingClaim,
    FindingDismissed,
    FindingReopened,
)


def build(args: argparse.Namespace) -> FindingClaim:
    if not is_token(args.project):
        raise UsageError(f"--project {args.project!r} is not a valid project id")
    reason = getattr(args, "reason", None)
    if reason is not None and reason not in DISMISS_REASONS:
        raise UsageError(f"--as {reason!r} is not one of: {', '.join(DISMISS_REASONS)}")
    try:
        return FindingClaim(
            project=args.project,
            actor=Actor(role="operator", principal=principal(args)),
            finding=args.finding,
            action=args.action,
            reason=reason,
            why=args.why,
        )
    except InvalidValue as exc:
        option = {"finding": "--id", "why": "--why", "reason": "--as"}.get(exc.field, exc.field)
        raise UsageError(f"{option} {exc.value!r}: {exc.hint}") from exc


def run(args: argparse.Namespace) -> int:
    if len(args.finding) != 26:
        raise UsageError(f"--id {args.finding!r} is not a finding id (a 26-character ULID)")
    claim = build(args)

    return claim_and_wait(
        args,
        claim,
        lambda seq: f"{claim.action} of {claim.finding} claimed at seq {seq} ({claim.id})",
        lambda event: _answer(event, claim),
    )


def _answer(event: object, claim: FindingClaim) -> str | None:
    match event:
        case FindingDismissed(claim=answered) if answered == claim.id:
            return f"dismissed ({event.reason}) by {event.by}"
        case FindingReopened(claim=answered) if answered == claim.id:
            return f"reopened by {event.by}"
        case FindingResolved(finding=finding) if (
            finding == claim.finding and claim.action == "resolve"
        ):
            return f"resolved: {event.why}"
        case FindingRaised(evidence=evidence) if evidence.get(ANSWERS_CLAIM) == claim.id:
            return event.message
    return None
