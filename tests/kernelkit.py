"""Run a daemon written on the kernel inside a test, on the test's own bus."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

from bus import Bus
from projections.transitions import Violation, system_violations
from schemas import Event, UnitTransitioned
from workers.kernel import Daemon, Kernel

DAEMON_PRINCIPAL = re.compile(r"^[a-z][a-z_-]*@\S+:\d+$")
"""A daemon instance's principal (``units@host:pid``, see kernel.system_actor). Tests that
stand in for a daemon publish as ``tests``, ``test-merger`` and the like: their
transitions set the scene and are not what the audit is about."""


def daemon_violations(events: Sequence[Event]) -> list[Violation]:
    """What the transition table's audit finds wrong in the transitions daemons published
    (one project's log, in order)."""
    by_daemons = {
        e.id
        for e in events
        if isinstance(e, UnitTransitioned) and DAEMON_PRINCIPAL.match(e.actor.principal)
    }
    return [v for v in system_violations(events) if v.event in by_daemons]


@contextlib.asynccontextmanager
async def running(bus: Bus, daemon: Daemon, **options: Any) -> AsyncIterator[Kernel]:
    """The daemon's kernel following the log until the block ends (then stopped cleanly;
    a crash of the daemon fails the test)."""
    kernel = Kernel(bus, daemon, **options)
    stop = asyncio.Event()
    task = asyncio.create_task(kernel.run(stop))
    try:
        yield kernel
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
