"""A cancel lost the way Python 3.11 loses one, for tests of the code that must survive it.

``asyncio.wait_for`` returns the awaited result instead of raising when a cancel lands just
as that result arrives (gh-86296), and nats-py waits for every request and acknowledgement
that way: the task carries on, its cancel still counted (``cancelling()``). A test wraps
one real call of the bus in :meth:`LosesCancels.through` to stage exactly that.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")

SLOW_S = 0.3
"""How long the wrapped call waits before it starts: an answer under load, long enough for
the test's cancel to land while it is awaited."""


class LosesCancels:
    """Counts the cancels it lost (``lost``)."""

    def __init__(self) -> None:
        self.lost = 0

    async def through(self, work: Awaitable[T]) -> T:
        """``await work`` (a real call), losing any cancel that lands meanwhile: the call
        completes and its result is returned, as ``wait_for`` returns it."""
        stored = asyncio.ensure_future(self._slowly(work))
        try:
            return await asyncio.shield(stored)
        except asyncio.CancelledError:
            self.lost += 1
            return await stored  # the answer arrives; the cancel is gone with the wait

    @staticmethod
    async def _slowly(work: Awaitable[T]) -> T:
        await asyncio.sleep(SLOW_S)
        return await work
