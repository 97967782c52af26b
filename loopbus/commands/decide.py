"""``loopbus decide``: the operator settles a builder's novel decision that waits on them.

The command publishes a claim (``decision.choice.v1``) under the operator's principal;
the builder daemon turns it into the recorded decision (a fact), unblocks the unit and
runs its round again. What can be checked against the log is checked first, in one line:
the decision is one the unit waits on, and the option is one of its options.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from loopbus.bus import Bus, read
from loopbus.commands.report import add_claimant, principal, token
from loopbus.errors import LoopbusError, UsageError
from loopbus.projections.builds import FOLD
from loopbus.schemas import Actor, project_subjects
from loopbus.schemas.decisions import DecisionChoice, DecisionRecorded, option_ids
from loopbus.settings import add_connection, add_project, connection


def register(sub: Any) -> None:
    text = "settle a builder's novel decision that waits on the operator"
    parser = sub.add_parser("decide", help=text, description=text)
    add_connection(parser, role="operator")
    add_claimant(parser)
    add_project(parser)
    parser.add_argument("--unit", required=True, help="the unit whose builder asked")
    parser.add_argument("--decision", required=True, help="the decision id it asked")
    parser.add_argument("--choose", required=True, help="the option id to take")
    parser.add_argument("--why", default="", help="the operator's rationale (recorded)")
    parser.add_argument(
        "--wait",
        type=float,
        default=None,
        metavar="SECONDS",
        help="wait this long for the decision to be recorded and print it",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    project = token("--project", args.project)
    unit = token("--unit", args.unit)
    decision = token("--decision", args.decision)
    choose = token("--choose", args.choose)
    if args.wait is not None and args.wait <= 0:
        raise UsageError(f"--wait {args.wait:g} must be a positive number of seconds")
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
        await check(bus, choice)
        ack = await bus.publish(choice)
        print(
            f"decision {choice.decision_id} of {choice.project}/{choice.unit}: "
            f"{choice.choose} claimed (seq {ack.seq}); the builder daemon records it"
        )
        if args.wait is None:
            return 0
        recorded = await wait_recorded(bus, choice, ack.seq, args.wait)
    finally:
        await bus.close()
    print(f"recorded: {recorded.decision_id} = {recorded.chosen} (by {recorded.by})")
    return 0


async def check(bus: Bus, choice: DecisionChoice) -> None:
    """One line when the unit does not wait on this decision or the option is not one."""
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
    if asked is None:
        waiting = ", ".join(sorted(build.awaiting)) or "none"
        raise UsageError(
            f"--decision {choice.decision_id!r} does not wait on the operator for unit "
            f"{choice.unit} (waiting: {waiting})"
        )
    options = option_ids(asked.options)
    if choice.choose not in options:
        raise UsageError(f"--choose {choice.choose!r} is not one of: {', '.join(options)}")


async def wait_recorded(
    bus: Bus, choice: DecisionChoice, from_seq: int, timeout: float
) -> DecisionRecorded:
    try:
        async with asyncio.timeout(timeout):
            async for record in read(
                bus, subjects=[project_subjects(choice.project)], start_seq=from_seq, follow=True
            ):
                event = record.event
                if isinstance(event, DecisionRecorded) and event.cause == choice.id:
                    return event
    except TimeoutError:
        pass
    raise LoopbusError(
        f"decision {choice.decision_id} not recorded within {timeout:g}s; is the builder "
        "daemon running? (`loopbus up --repo PATH` runs it)"
    )
