"""A holder whose work has returned stops renewing and hands the answer back even when the
cancel that stops its renewals is lost inside a renewal's publish.

On Python 3.11 ``asyncio.wait_for`` returns the awaited result instead of raising when a
cancel lands just as that result arrives (gh-86296), and nats-py waits for every publish
acknowledgement that way. A renewal task cancelled at that moment ran on, renewing the
lease until its deadline, while the holder waited for it to end: a gate suite that had
finished kept its answer (and its item) for the lease's whole deadline. The bus below
is the real one, its publishes made to lose a cancel exactly as that race does."""

from __future__ import annotations

import asyncio
from typing import Any

from cancelkit import LosesCancels
from logkit import log_events, of

from bus import Bus
from schemas import Actor, Event
from schemas.leases import LeaseReleased, LeaseTaken
from workers.kernel.lease_holding import holding
from workers.leases.decide import Held

SYSTEM = Actor(role="system", principal="gate-runner@tests")


class LosesAPublishCancel:
    """The real bus, except that a cancel landing while a conditional publish waits for
    its acknowledgement is lost (:mod:`cancelkit`): the publish completes and returns its
    ack, and the task carries on."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self.publishing = asyncio.Event()
        self.cancels = LosesCancels()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.bus, name)

    @property
    def lost(self) -> int:
        return self.cancels.lost

    async def publish_transition(self, event: Event, seq: int) -> Any:
        self.publishing.set()
        try:
            return await self.cancels.through(self.bus.publish_transition(event, seq))
        finally:
            self.publishing.clear()


async def test_a_lost_cancel_does_not_keep_a_finished_items_lease_renewed(
    bus: Bus, project: str
) -> None:
    taking = LeaseTaken(project=project, actor=SYSTEM, work="gate", item="u1", holder="me", ttl_s=1)
    ack = await bus.publish_transition(taking, 0)
    held = Held(project, "gate", "u1", "me", 1, ack.seq, None)  # no deadline: nothing ends it
    losing = LosesAPublishCancel(bus)

    async def work() -> str:
        await losing.publishing.wait()  # it returns while a renewal is being acknowledged
        return "answered"

    # Before the fix the holder waited on its renewals until the lease's deadline (none
    # here): only this bound's own cancel got it out, the item never released.
    async with asyncio.timeout(30) as bound:
        answered = await holding(losing, SYSTEM, held, work())  # type: ignore[arg-type]
    assert not bound.expired(), "the holder waited on its renewals until the test's bound"
    assert answered == "answered"
    assert losing.lost >= 1, "the renewal's cancel was not lost: the race was not staged"

    events = await log_events(bus, project)
    [released] = of(LeaseReleased, events, item="u1")  # at the sequence of the last renewal
    assert released.how == "done"
    assert isinstance(events[-1], LeaseReleased), "a lease event after the release"
