"""A following reader cancelled while it re-creates its consumer stops, even when nats-py
swallows that cancel.

On Python 3.11 ``asyncio.wait_for`` returns the awaited result instead of raising when a
cancel lands just as that result arrives (gh-86296), and nats-py waits for every request
that way. A reader cancelled while its recovery's request was answered went on following
the log: the command or daemon that cancelled it waited for ever. Below, the server is
real and so is the consumer's deletion; only the re-creating request is made to lose its
cancel exactly as that race does.
"""

from __future__ import annotations

import asyncio
from typing import Any

from cancelkit import LosesCancels
from logkit import findings

from bus import Bus, read
from bus.provision import LOG_STREAM
from schemas import project_subjects


class LosesCancelsOnCreate:
    """The real JetStream context, except that a cancel landing while a consumer is being
    re-created is lost (:mod:`cancelkit`): the request completes and returns, and the task
    carries on."""

    def __init__(self, js: Any) -> None:
        self.js = js
        self.consumers: list[str] = []
        self.recreating = asyncio.Event()
        self.cancels = LosesCancels()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.js, name)

    @property
    def lost(self) -> int:
        return self.cancels.lost

    async def add_consumer(self, *args: Any, **kwargs: Any) -> Any:
        first = not self.consumers
        if not first:
            self.recreating.set()
        call = self.js.add_consumer(*args, **kwargs)
        info = await (call if first else self.cancels.through(call))
        self.consumers.append(str(info.name))
        return info


class Wrapped:
    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self.js = LosesCancelsOnCreate(bus.js)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.bus, name)


async def test_a_reader_cancelled_during_its_recovery_stops(bus: Bus, project: str) -> None:
    wrapped = Wrapped(bus)
    first = asyncio.Event()

    async def follow() -> None:
        async for _ in read(wrapped, subjects=[project_subjects(project)], follow=True):  # type: ignore[arg-type]
            first.set()

    await bus.publish_many(findings(project, 1))
    reading = asyncio.create_task(follow())
    async with asyncio.timeout(30):
        await first.wait()
    # Deleting the consumer under the reader makes the server end its pull with "consumer
    # deleted": the reader re-creates the consumer where it left off.
    await bus.js.delete_consumer(LOG_STREAM, wrapped.js.consumers[0])
    async with asyncio.timeout(30):
        await wrapped.js.recreating.wait()
    reading.cancel()

    # Before the fix the reader followed on after the lost cancel: nothing but this
    # bound's own timeout ended the wait.
    done, _ = await asyncio.wait([reading], timeout=10)
    if not done:
        reading.cancel()  # a second cancel, not lost, so the failing test ends cleanly
    assert done, "the reader followed on after its cancel was lost in the recovery"
    assert reading.cancelled()
    assert wrapped.js.lost == 1, "the cancel was not lost: the race was not staged"
