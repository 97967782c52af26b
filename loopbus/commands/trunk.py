"""``loopbus trunk recheck``: ask the merger to gate trunk again, past the gate cache.

A red trunk is gated again on its own whenever a new commit reaches it. What the log
cannot see — an interpreter or a tool installed since, a service a check needs coming
back — is for the operator to say: this publishes the claim (``trunk.recheck.v1``), the
merger runs every trunk check once more and records the verdict, and when trunk is green
the open red-trunk finding resolves and the merge queue moves again.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from loopbus.claiming import publish_claim
from loopbus.commands.report import add_claimant, principal, token
from loopbus.known import require_known
from loopbus.settings import add_connection, add_project, connection
from schemas import Actor
from schemas.merges import TrunkRecheck


def register(sub: Any) -> None:
    parser = sub.add_parser("trunk", help="act on the project's trunk")
    verbs = parser.add_subparsers(dest="trunk_verb", metavar="VERB")
    verbs.required = True
    text = "ask the merger to gate trunk again, past the cache (its inputs changed outside git)"
    recheck = verbs.add_parser("recheck", help=text, description=text)
    add_connection(recheck, role="operator")
    add_claimant(recheck)
    add_project(recheck)
    recheck.add_argument("--why", default="", help="what changed (recorded with the claim)")
    recheck.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    claim = TrunkRecheck(
        project=token("--project", args.project),
        actor=Actor(role="operator", principal=principal(args)),
        why=args.why,
    )

    async def publish() -> int:
        bus = await connection(args).open()
        try:
            await require_known(bus, claim.project)
            ack = await publish_claim(bus, claim)
        finally:
            await bus.close()
        print(f"trunk recheck {claim.id} published at seq {ack.seq}; the merger gates trunk again")
        return 0

    return asyncio.run(publish())
