"""Wait for the system's answer to a claim a command just published (``--wait``).

Every command that waits for a daemon's answer waits here, so the rule that makes an
answer an answer is written once: it is a *fact of the system's*, stored on a fact
subject, after the claim. An agent can publish an event shaped like an answer (a
transition, an acceptance, a refusal finding carrying the claim's id); on a server without
loopbus's credentials it can even put it on a fact subject. Taking that for the answer
would let the agent tell the operator something the system never said.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from bus import Bus, read
from loopbus.claiming import publish_claim
from loopbus.errors import LoopbusError
from loopbus.known import require_known, require_known_unless_new
from loopbus.settings import connection
from loopbus.terminal_text import say
from schemas import Event, FindingRaised, project_subjects
from schemas.authority import REFUSAL_CLASS, standing
from schemas.subjects import CLAIM, parse_subject

T = TypeVar("T")

Answer = Callable[[Event], "str | None"]
"""An event -> the line that says how it answers the claim, or ``None`` (not an answer)."""


async def await_answer(
    bus: Bus,
    subjects: Sequence[str],
    recognise: Callable[[Event], T | None],
    timeout: float,
    *,
    after: int = 0,
) -> T | None:
    """Follow ``subjects`` from just past seq ``after`` (the claim's) until ``recognise``
    makes something of a system fact; return it, or ``None`` when nothing answered within
    ``timeout`` seconds. ``recognise`` never sees an agent's event, a system finding that
    is not a refusal, nor a record that does not decode."""
    try:
        async with asyncio.timeout(timeout):
            async for record in read(bus, subjects=subjects, start_seq=after + 1, follow=True):
                if record.event is None or not may_answer(record.event, record.subject):
                    continue  # an answer is the system's: an agent's look-alike is not one
                found = recognise(record.event)
                if found is not None:
                    return found
    except TimeoutError:
        return None
    return None  # a followed read ends only when the connection does


async def wait_for_answer(
    bus: Bus, project: str, answer: Answer, wait: float, daemon: str, *, after: int = 0
) -> int:
    """Wait for the answer ``answer`` turns into a line; print it and return 1 when it is
    a refusal, else 0. ``LoopbusError`` after ``wait`` seconds, naming the ``daemon``
    that should have answered."""
    line = await await_answer(bus, [project_subjects(project)], answer, wait, after=after)
    if line is None:
        raise LoopbusError(f"no answer within {wait:g}s; is the {daemon} daemon running?")
    say(line)
    return 1 if line.startswith("refused") else 0


def may_answer(event: Event, subject: str) -> bool:
    """A system fact, and when a finding, a refusal: the system re-raises findings whose
    evidence is partly an agent's words (a reviewer's, an investigator's), so the claim id
    in such a finding's evidence is the agent's to put there, not the system's answer."""
    if isinstance(event, FindingRaised) and event.cls != REFUSAL_CLASS:
        return False
    return system_fact(event, subject)


def system_fact(event: Event, subject: str) -> bool:
    """A fact of the system's, stored on a fact subject (which only the system credential
    may publish to), not a claim whose body merely says ``system``."""
    parsed = parse_subject(subject)
    return standing(event) == "fact" and parsed is not None and parsed.family != CLAIM


def claim_and_wait(
    args: argparse.Namespace,
    claim: Event,
    said: Callable[[int], str],
    answer: Answer,
    check: Callable[[Bus], Awaitable[None]] | None = None,
) -> int:
    """Publish an operator's or agent's ``claim`` for a command, print ``said(seq)``, and
    with ``--wait S`` print the ratchet's answer (exit 1 for a refusal). The project must
    have events, unless the command takes ``--new`` and was given it; ``check`` (raising
    a usage error) runs on the log before anything is published."""

    async def publish() -> int:
        bus = await connection(args).open()
        try:
            if hasattr(args, "new"):
                await require_known_unless_new(bus, args)
            else:
                await require_known(bus, claim.project)
            if check is not None:
                await check(bus)
            ack = await publish_claim(bus, claim)
            say(said(ack.seq))
            if args.wait is None:
                return 0
            return await wait_for_answer(
                bus, claim.project, answer, args.wait, "ratchet", after=ack.seq
            )
        finally:
            await bus.close()

    return asyncio.run(publish())
