"""Wait for the system's answer to a claim a command just published (``--wait``)."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable

from loopbus.bus import Bus, read
from loopbus.errors import LoopbusError
from loopbus.known import require_known, require_known_unless_new
from loopbus.schemas import Event, project_subjects
from loopbus.schemas.authority import standing
from loopbus.schemas.subjects import CLAIM, parse_subject
from loopbus.settings import connection

Answer = Callable[[object], "str | None"]
"""An event -> the line that says how it answers the claim, or ``None`` (not an answer)."""


async def wait_for_answer(bus: Bus, project: str, answer: Answer, wait: float, daemon: str) -> int:
    """Follow ``project``'s log until ``answer`` recognises an event; print its line and
    return 1 when it is a refusal, else 0. ``LoopbusError`` after ``wait`` seconds,
    naming the ``daemon`` that should have answered."""
    try:
        async with asyncio.timeout(wait):
            async for record in read(bus, subjects=[project_subjects(project)], follow=True):
                if record.event is None or not _system_fact(record.event, record.subject):
                    continue  # an answer is the system's: an agent's look-alike is not one
                line = answer(record.event)
                if line is not None:
                    print(line)
                    return 1 if line.startswith("refused") else 0
    except TimeoutError as exc:
        raise LoopbusError(f"no answer within {wait:g}s; is the {daemon} daemon running?") from exc
    return 1


def _system_fact(event: Event, subject: str) -> bool:
    """A fact of the system's, stored on a fact subject (which only the system credential
    may publish to), not a claim whose body merely says ``system``."""
    parsed = parse_subject(subject)
    return standing(event) == "fact" and parsed is not None and parsed.family != CLAIM


def claim_and_wait(
    args: argparse.Namespace, claim: Event, said: Callable[[int], str], answer: Answer
) -> int:
    """Publish an operator's or agent's ``claim`` for a command, print ``said(seq)``, and
    with ``--wait S`` print the ratchet's answer (exit 1 for a refusal). The project must
    have events, unless the command takes ``--new`` and was given it."""

    async def publish() -> int:
        bus = await connection(args).open()
        try:
            if hasattr(args, "new"):
                await require_known_unless_new(bus, args)
            else:
                await require_known(bus, claim.project)
            ack = await bus.publish(claim)
            print(said(ack.seq))
            if args.wait <= 0:
                return 0
            return await wait_for_answer(bus, claim.project, answer, args.wait, "ratchet")
        finally:
            await bus.close()

    return asyncio.run(publish())
