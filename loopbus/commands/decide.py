"""``loopbus decide``: the operator settles a builder's novel decision that waits on them,
or confirms one ``long`` mode picked alone.

The command publishes a claim (``decision.choice.v1``) under the operator's principal.
For a decision waiting on the operator, the builder daemon turns it into the recorded
decision (a fact), unblocks the unit and runs its round again. For an auto pick
(``--confirm``, or ``--choose`` naming the option it picked) the claim is the operator's
confirmation: the pick is seen by a second principal, and its unit may merge
(docs/decisions.md). What can be checked against the log is checked first, in one line:
the decision is one the unit waits on (or an auto pick of it), and the option is one of
its options (for an auto pick: the one picked).
"""

from __future__ import annotations

import argparse
import asyncio

import msgspec

from bus import Bus, read
from loopbus.claiming import publish_claim
from loopbus.commands.report import principal, token
from loopbus.errors import LoopbusError, UsageError
from loopbus.settings import connection
from loopbus.terminal_text import say
from projections.builds import FOLD, AutoPick
from schemas import Actor, project_subjects
from schemas.decisions import DecisionChoice, DecisionRecorded, option_ids


def run(args: argparse.Namespace) -> int:
    project = token("--project", args.project)
    unit = token("--unit", args.unit)
    decision = token("--decision", args.decision)
    # With --confirm the option is the one the log says was picked: filled in by check().
    choose = token("--choose", args.choose) if args.choose is not None else decision
    choice = DecisionChoice(
        project=project,
        actor=Actor(role="operator", principal=principal(args)),
        unit=unit,
        decision_id=decision,
        choose=choose,
        why=args.why,
    )
    return asyncio.run(_run(args, choice))


async def _run(args: argparse.Namespace, choice: DecisionChoice) -> int:
    bus = await connection(args).open()
    try:
        choice, pick = await check(bus, choice, confirm=args.confirm)
        ack = await publish_claim(bus, choice)
        if pick is not None:
            say(
                f"decision {choice.decision_id} of {choice.project}/{choice.unit}: "
                f"auto pick {pick.chosen} confirmed (seq {ack.seq}); seen by "
                f"operator:{choice.actor.principal}, it no longer holds the unit's merge"
            )
            return 0
        say(
            f"decision {choice.decision_id} of {choice.project}/{choice.unit}: "
            f"{choice.choose} claimed (seq {ack.seq}); the builder daemon records it"
        )
        if args.wait is None:
            return 0
        recorded = await wait_recorded(bus, choice, ack.seq, args.wait)
    finally:
        await bus.close()
    say(f"recorded: {recorded.decision_id} = {recorded.chosen} (by {recorded.by})")
    return 0


async def check(
    bus: Bus, choice: DecisionChoice, *, confirm: bool = False
) -> tuple[DecisionChoice, AutoPick | None]:
    """The choice to publish (with ``confirm``: the option picked) and the auto pick it
    confirms (``None``: it answers a decision waiting on the operator); one line when the
    unit does not wait on this decision or the option is not one."""
    state = FOLD.initial()
    seen = False
    async for record in read(bus, subjects=[project_subjects(choice.project)]):
        if record.event is not None:
            seen = True
            state = FOLD.apply(state, record.event)
    if not seen:
        raise UsageError(f"--project {choice.project!r} has no event on the log; check the id")
    build = state.units.get(choice.unit)
    if build is None:
        raise UsageError(f"--unit {choice.unit!r} was never dispatched in {choice.project}")
    asked = build.awaiting.get(choice.decision_id)
    pick = build.picks.get(choice.decision_id)
    if asked is None and pick is not None:
        return _confirmation(choice, pick, confirm), pick
    if asked is not None and confirm:
        options = ", ".join(option_ids(asked.options))
        raise UsageError(
            f"--confirm: decision {choice.decision_id} waits on the operator, nothing is "
            f"picked to confirm; settle it with --choose (one of: {options})"
        )
    if asked is None:
        waiting = ", ".join(sorted(build.awaiting)) or "none"
        picked = ", ".join(sorted(build.picks)) or "none"
        raise UsageError(
            f"--decision {choice.decision_id!r} does not wait on the operator for unit "
            f"{choice.unit} (waiting: {waiting}; auto-picked, to --confirm: {picked})"
        )
    options = option_ids(asked.options)
    if choice.choose not in options:
        raise UsageError(f"--choose {choice.choose!r} is not one of: {', '.join(options)}")
    return choice, None


def _confirmation(choice: DecisionChoice, pick: AutoPick, confirm: bool) -> DecisionChoice:
    """The operator's confirmation of an auto pick: the option it picked, nothing else."""
    if not confirm and choice.choose != pick.chosen:
        raise UsageError(
            f"--choose {choice.choose!r}: decision {choice.decision_id} was auto-picked as "
            f"{pick.chosen!r} and nothing waits on it; confirm it with --confirm (another "
            "option cannot replace an auto pick: left unconfirmed, the unit does not merge)"
        )
    return msgspec.structs.replace(choice, choose=pick.chosen)


async def wait_recorded(
    bus: Bus, choice: DecisionChoice, from_seq: int, timeout: float
) -> DecisionRecorded:
    """The builder daemon's record of ``choice`` (a system fact: an agent's decision that
    names the choice as its cause is not one)."""
    from loopbus.answers import await_answer

    def recorded(event: object) -> DecisionRecorded | None:
        return event if isinstance(event, DecisionRecorded) and event.cause == choice.id else None

    subjects = [project_subjects(choice.project)]
    answer = await await_answer(bus, subjects, recorded, timeout, after=from_seq)
    if answer is not None:
        return answer
    raise LoopbusError(
        f"decision {choice.decision_id} not recorded within {timeout:g}s; is the builder "
        "daemon running? (`loopbus up --repo PATH` runs it)"
    )
