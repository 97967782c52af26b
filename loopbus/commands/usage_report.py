"""``loopbus report usage``: a builder's claim of the tokens a turn spent on a unit.

Usage reports feed the slice budget "tokens per delivered unit"; the standards daemon
raises the breach when the budget is exceeded.
"""

from __future__ import annotations

import argparse
import asyncio

from loopbus.claiming import publish_claim
from loopbus.commands.report import principal, token
from loopbus.errors import UsageError
from loopbus.known import require_known
from loopbus.known_work import require_unit
from loopbus.settings import connection
from schemas import Actor
from schemas.slices import UsageReport


def build(args: argparse.Namespace) -> UsageReport:
    for option, value in (("--tokens-in", args.tokens_in), ("--tokens-out", args.tokens_out)):
        if value < 0:
            raise UsageError(f"{option} {value} is negative; give the tokens spent (0 or more)")
    if args.tokens_in == 0 and args.tokens_out == 0:
        raise UsageError("give --tokens-in and/or --tokens-out: a usage report of 0 says nothing")
    return UsageReport(
        project=token("--project", args.project),
        actor=Actor(role="builder", principal=principal(args)),
        unit=token("--unit", args.unit),
        tokens_in=args.tokens_in,
        tokens_out=args.tokens_out,
        model=args.model,
    )


def run(args: argparse.Namespace) -> int:
    report = build(args)

    async def publish() -> int:
        bus = await connection(args).open()
        try:
            await require_known(bus, report.project)
            # Any state: a turn's usage may be reported after the unit ended.
            await require_unit(bus, report.project, report.unit)
            ack = await publish_claim(bus, report)
        finally:
            await bus.close()
        print(f"usage report {report.id} published at seq {ack.seq}")
        return 0

    return asyncio.run(publish())
