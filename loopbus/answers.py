"""Wait for the system's answer to a claim a command just published (``--wait``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from loopbus.bus import Bus, read
from loopbus.errors import LoopbusError
from loopbus.schemas import project_subjects

Answer = Callable[[object], "str | None"]
"""An event -> the line that says how it answers the claim, or ``None`` (not an answer)."""


async def wait_for_answer(bus: Bus, project: str, answer: Answer, wait: float, daemon: str) -> int:
    """Follow ``project``'s log until ``answer`` recognises an event; print its line and
    return 1 when it is a refusal, else 0. ``LoopbusError`` after ``wait`` seconds,
    naming the ``daemon`` that should have answered."""
    try:
        async with asyncio.timeout(wait):
            async for record in read(bus, subjects=[project_subjects(project)], follow=True):
                line = answer(record.event)
                if line is not None:
                    print(line)
                    return 1 if line.startswith("refused") else 0
    except TimeoutError as exc:
        raise LoopbusError(f"no answer within {wait:g}s; is the {daemon} daemon running?") from exc
    return 1
