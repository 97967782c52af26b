"""``loopbus report started|heartbeat|blocked|unblocked|commit|gave-up``: a unit's claims.

Each publishes one report on ``report.<role>.<unit>`` (a heartbeat is put in the heartbeat
bucket instead, which only the system credential may write). Exit 0 means the claim was
*accepted as a report*, not that the unit moved: the units daemon decides that.
``--wait SECONDS`` waits for its answer and prints the transition, or exits 1 with the
reason the claim was refused.

What can be checked without the log is checked here, as one line: the reason is one of
the closed set, a subject is given, a capacity subject is a budget, a sha is a full
commit id, a give-up says why. Whether a finding or a sibling unit exists is the units
daemon's to establish.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from loopbus.bus import HEARTBEAT_BUCKET, Bus
from loopbus.commands.report import add_claimant, principal, token
from loopbus.completion import offer
from loopbus.errors import LoopbusError, UsageError
from loopbus.known import require_known
from loopbus.projections.claims import SHA, SUBJECT_KINDS
from loopbus.projections.units import REFUSAL_CLASS
from loopbus.schemas import BLOCK_REASONS, Actor, FindingRaised, Role, UnitTransitioned
from loopbus.schemas.ids import answer_id
from loopbus.schemas.reports import (
    CAPACITY_BUDGETS,
    BlockedReport,
    CommitReport,
    GaveUpReport,
    HeartbeatReport,
    StartedReport,
    UnblockedReport,
    UnitReport,
    encode_heartbeat,
    heartbeat_key,
)
from loopbus.schemas.subjects import claim_subjects
from loopbus.settings import add_connection, add_project, connection
from loopbus.workers.units.daemon import ANSWER_SALT

CLAIMANTS: tuple[Role, ...] = ("builder", "operator")

_HELP = {
    "started": "claim the unit has started (after it was dispatched)",
    "heartbeat": (
        "say the unit is alive (kept in the heartbeat bucket, not on the log; only the system "
        "credential may write it, and only the unit's holder's beat counts)"
    ),
    "blocked": "claim the unit cannot proceed: --reason and --subject",
    "unblocked": "claim what the unit waited on has arrived",
    "commit": "submit the unit's commit for the gates: --sha",
    "gave-up": "give the unit up, saying why: --why",
}


def register(kinds: Any) -> None:
    """Add the unit report subcommands to ``loopbus report``'s subparsers."""
    for name, text in _HELP.items():
        parser = kinds.add_parser(name, help=text, description=text)
        add_connection(parser, role="agent")
        add_claimant(parser)
        add_project(parser)
        parser.add_argument("--unit", required=True)
        offer(
            parser.add_argument(
                "--role",
                default="builder",
                help="who claims: builder (default) or operator (speaking for the unit)",
            ),
            CLAIMANTS,
        )
        if name == "blocked":
            offer(
                parser.add_argument("--reason", default=None, help=", ".join(BLOCK_REASONS)),
                BLOCK_REASONS,
            )
            parser.add_argument(
                "--subject",
                default=None,
                help="what it waits on: "
                + "; ".join(f"{r} -> {k}" for r, k in SUBJECT_KINDS.items()),
            )
        elif name == "commit":
            parser.add_argument("--sha", default=None, help="the full commit id")
        elif name == "gave-up":
            parser.add_argument("--why", default=None, help="why the unit cannot be finished")
        if name != "heartbeat":
            parser.add_argument(
                "--wait",
                type=float,
                default=None,
                metavar="SECONDS",
                help="wait this long for the units daemon's answer and print it",
            )
        parser.set_defaults(handler=run, report_verb=name)


def build_report(args: argparse.Namespace) -> UnitReport | HeartbeatReport:
    """The claim the arguments describe, or a one-line :class:`UsageError`."""
    if args.role not in CLAIMANTS:
        raise UsageError(f"--role {args.role!r} is not one of: {', '.join(CLAIMANTS)}")
    project = token("--project", args.project)
    unit = token("--unit", args.unit)
    actor = Actor(role=args.role, principal=principal(args))
    common: dict[str, Any] = {"project": project, "actor": actor, "unit": unit}
    verb = args.report_verb
    if verb == "started":
        return StartedReport(**common)
    if verb == "heartbeat":
        return HeartbeatReport(**common)
    if verb == "unblocked":
        return UnblockedReport(**common)
    if verb == "blocked":
        reason, subject = block_arguments(args.reason, args.subject)
        return BlockedReport(**common, reason=reason, subject=subject)
    if verb == "commit":
        sha = (args.sha or "").strip().lower()
        if not SHA.match(sha):
            raise UsageError(
                f"--sha {args.sha!r} is not a full commit id: give all 40 (or 64) hex digits, "
                "e.g. $(git rev-parse HEAD)"
            )
        return CommitReport(**common, sha=sha)
    why = (args.why or "").strip()
    if not why:
        raise UsageError("--why is required: a unit that gives up says why")
    return GaveUpReport(**common, why=why)


def block_arguments(reason: str | None, subject: str | None) -> tuple[str, str]:
    """(reason, subject) when they can stand; a one-line usage error naming the fix if not."""
    allowed = ", ".join(BLOCK_REASONS)
    if not reason:
        raise UsageError(f"--reason is required: one of {allowed}")
    if reason not in BLOCK_REASONS:
        raise UsageError(f"--reason {reason!r} is not one of: {allowed}")
    subject = (subject or "").strip()
    if not subject:
        raise UsageError(f"--subject is required: {reason} names {SUBJECT_KINDS[reason]}")
    if reason == "awaiting-capacity" and subject not in CAPACITY_BUDGETS:
        raise UsageError(
            f"--subject {subject!r} is not a budget: one of {', '.join(CAPACITY_BUDGETS)}"
        )
    if reason in ("awaiting-dependency", "awaiting-gate", "awaiting-operator"):
        token("--subject", subject)
    return reason, subject


def run(args: argparse.Namespace) -> int:
    claim = build_report(args)
    wait = getattr(args, "wait", None)
    if wait is not None and wait <= 0:
        raise UsageError(f"--wait {wait:g} must be a positive number of seconds")
    return asyncio.run(_run(args, claim))


async def _run(args: argparse.Namespace, claim: UnitReport | HeartbeatReport) -> int:
    bus = await connection(args).open()
    try:
        await require_known(bus, claim.project)
        if isinstance(claim, HeartbeatReport):
            beats = await bus.bucket(HEARTBEAT_BUCKET)
            revision = await beats.put(
                heartbeat_key(claim.project, claim.unit), encode_heartbeat(claim)
            )
            print(f"heartbeat for {claim.project}/{claim.unit} stored (revision {revision})")
            return 0
        ack = await bus.publish(claim)
        print(f"{args.report_verb} report {claim.id} published at seq {ack.seq}")
        if args.wait is None:
            return 0
        answer = await wait_for_answer(bus, claim, ack.seq, args.wait)
    finally:
        await bus.close()
    if isinstance(answer, UnitTransitioned):
        ready = " (ready)" if answer.ready else ""
        detail = f" {answer.block.reason} on {answer.block.subject}" if answer.block else ""
        print(
            f"unit {answer.unit}: {answer.prior or 'planned'} -> {answer.state}{detail}{ready} "
            f"(by {answer.by})"
        )
        return 0
    raise LoopbusError(answer.message)


async def wait_for_answer(
    bus: Bus, report: UnitReport, from_seq: int, timeout: float
) -> UnitTransitioned | FindingRaised:
    """The units daemon's answer to ``report``: its transition, or its refusal finding."""
    from loopbus.answers import await_answer

    wanted = answer_id(report.id, ANSWER_SALT)

    def answer(event: object) -> UnitTransitioned | FindingRaised | None:
        if isinstance(event, UnitTransitioned) and event.cause == report.id:
            return event
        if (
            isinstance(event, FindingRaised)
            and event.cls == REFUSAL_CLASS
            and (event.id == wanted or event.evidence.get("report") == report.id)
        ):
            return event
        return None

    subjects = claim_subjects(report.project, report.unit)
    found = await await_answer(bus, subjects, answer, timeout, after=from_seq)
    if found is not None:
        return found
    raise LoopbusError(
        f"no answer to report {report.id} within {timeout:g}s; is the units daemon running? "
        "(`loopbus up` runs it; `python -m loopbus.workers.units` alone)"
    )
