"""``loopbus report started|heartbeat|blocked|unblocked|commit|gave-up``: a unit's claims.

Each publishes one report on ``report.<role>.<unit>`` (a heartbeat is put in the heartbeat
bucket instead, which only the system credential may write). Exit 0 means the claim was
*accepted as a report*, not that the unit moved: the units daemon decides that.
``--wait SECONDS`` waits for its answer and prints the transition, or exits 1 with the
reason the claim was refused.

What can be checked without the log is checked here, as one line: the reason is one of
the closed set, a subject is given, a capacity subject is a budget, a sha is a full
commit id, a give-up says why. With the log, before publishing: the unit is one an accepted
plan has and it has not ended. Whether a finding or a sibling unit a block waits on exists
is the units daemon's to establish.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from bus import HEARTBEAT_BUCKET, Bus
from loopbus.claiming import publish_claim
from loopbus.commands.report import principal, token
from loopbus.commands.report_args import CLAIMANTS
from loopbus.errors import LoopbusError, UsageError
from loopbus.known import require_known
from loopbus.known_work import require_unit
from loopbus.settings import connection
from loopbus.terminal_text import say
from schemas import BLOCK_REASONS, Actor, FindingRaised, UnitTransitioned
from schemas.ids import answer_id
from schemas.reports import (
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
from schemas.subjects import claim_subjects
from schemas.units import SUBJECT_KINDS

ENDED = {
    "started": "to start",
    "blocked": "to block",
    "unblocked": "to unblock",
    "commit": "to commit to",
    "gave-up": "to give up",
}
"""What each claim would do to a unit, for the line that refuses one about an ended unit."""


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
        from projections.claims import SHA  # the folds: only a commit report pays

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
        # Checked before publishing: the units daemon would refuse a claim about a unit no
        # plan has, or one that ended, only after "published" was printed. (A beat above is
        # not on the log and counts only from the unit's holder, so it skips this read.)
        await require_unit(bus, claim.project, claim.unit, ended=ENDED[args.report_verb])
        ack = await publish_claim(bus, claim)
        print(f"{args.report_verb} report {claim.id} published at seq {ack.seq}")
        if args.wait is None:
            return 0
        answer = await wait_for_answer(bus, claim, ack.seq, args.wait)
    finally:
        await bus.close()
    if isinstance(answer, UnitTransitioned):
        ready = " (ready)" if answer.ready else ""
        detail = f" {answer.block.reason} on {answer.block.subject}" if answer.block else ""
        say(
            f"unit {answer.unit}: {answer.prior or 'planned'} -> {answer.state}{detail}{ready} "
            f"(by {answer.by})"
        )
        return 0
    raise LoopbusError(answer.message)


async def wait_for_answer(
    bus: Bus, report: UnitReport, from_seq: int, timeout: float
) -> UnitTransitioned | FindingRaised:
    """The units daemon's answer to ``report``: its transition, or its refusal finding."""
    # Imported here, not at the top: the units daemon brings the kernel and dulwich, and
    # the answer loop the folds, which only --wait needs (a heartbeat in a script's loop
    # would pay for them).
    from loopbus.answers import await_answer
    from schemas.authority import REFUSAL_CLASS
    from workers.units.face import ANSWER_SALT

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
        "(`loopbus up` runs it; `python -m workers.units` alone)"
    )
