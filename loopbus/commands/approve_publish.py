"""The one way ``loopbus approve`` publishes an approval it built from its arguments: refuse
``--wait`` where nothing waits, connect, check that the credential may publish the claim
and that the project is known, check what the claim names (a per-kind check, so an
approval that could only be refused is one line before anything is published), publish,
print what was published and who answers it.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable

from bus import Bus
from loopbus.claiming import publish_claim
from loopbus.errors import UsageError
from loopbus.known import require_known
from loopbus.settings import connection
from schemas import Event
from schemas.subjects import subject_of

Check = Callable[[Bus], Awaitable[None]]
"""What a kind checks on the log before publishing (raises :class:`UsageError`)."""


def refuse_wait(args: argparse.Namespace, follow: str) -> None:
    """``--wait`` is for ``--charter``; elsewhere the answer comes later: ``follow`` says
    how to follow it."""
    if getattr(args, "wait", False):
        raise UsageError(f"--wait: {follow} (--wait is for --charter)")


def publish_approval(
    args: argparse.Namespace, claim: Event, check: Check, said: Callable[[int], str]
) -> int:
    """Publish ``claim`` once ``check`` passed; print ``said(seq)``."""

    async def publish() -> int:
        bus = await connection(args).open()
        try:
            bus.check_publish(subject_of(claim))  # a credential that may not approve: say so
            await require_known(bus, claim.project)
            await check(bus)
            ack = await publish_claim(bus, claim)
        finally:
            await bus.close()
        print(said(ack.seq))
        return 0

    return asyncio.run(publish())
