"""One project's log inside a test: many findings to fill it with, and reading it back
(all of it, or followed until a condition holds)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from bus import Bus, read
from schemas import Actor, Event, FindingRaised, parse_target, project_subjects

REVIEWER = Actor(role="reviewer", principal="r1")


def findings(project: str, count: int, message: str = "x" * 200) -> list[FindingRaised]:
    """``count`` distinct reviewer findings about lines of one file (bulk for the log)."""
    return [
        FindingRaised(
            project=project,
            actor=REVIEWER,
            producer="reviewer",
            target=parse_target(f"code:a.py:{i % 900 + 1}-{i % 900 + 1}"),
            severity="low",
            message=message,
        )
        for i in range(count)
    ]


async def log_events(bus: Bus, project: str) -> list[Event]:
    """Every decodable event on the project's log, in order."""
    return [r.event async for r in read(bus, subjects=[project_subjects(project)]) if r.event]


async def wait_log(
    bus: Bus, project: str, done: Callable[[list[Event]], bool], timeout: float = 30.0
) -> list[Event]:
    """Follow the project's log until ``done(events so far)``; ``TimeoutError`` otherwise."""
    events: list[Event] = []
    async with asyncio.timeout(timeout):
        reader = read(bus, subjects=[project_subjects(project)], follow=True)
        async with contextlib.aclosing(reader):
            async for record in reader:
                if record.event is not None:
                    events.append(record.event)
                if done(events):
                    return events
    raise AssertionError("unreachable")  # pragma: no cover


def of(kind: type[Any], events: list[Event], **fields: Any) -> list[Any]:
    """Events of ``kind`` whose attributes equal ``fields``."""
    return [
        e
        for e in events
        if isinstance(e, kind) and all(getattr(e, k) == v for k, v in fields.items())
    ]
