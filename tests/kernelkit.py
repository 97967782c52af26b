"""Run a daemon written on the kernel inside a test, on the test's own bus."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from loopbus.bus import Bus
from loopbus.workers.kernel import Daemon, Kernel


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
