"""A check run in flight on another runner is awaited only until its deadline: a runner
that keeps renewing a check lease past it (alive but stuck) no longer holds the waiters,
which take the check over and run it themselves; and a holder whose work ignores its
cancellation still lets the item go."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

import pytest
from logkit import of, wait_log

from bus import Bus, TransitionConflict
from schemas import Actor
from schemas.gates import cache_key_digest
from schemas.leases import LeaseReleased, LeaseRenewed, LeaseTaken
from workers.kernel.lease_flights import Flights
from workers.kernel.lease_holding import LeaseOverran, holding
from workers.leases.decide import Held

SYSTEM = Actor(role="system", principal="gate-runner@tests")
KEY = "unit-tests|inputs|config"


async def renew_for_ever(bus: Bus, project: str, item: str, seq: int, taking: LeaseTaken) -> None:
    """The stuck runner: its check never ends, its lease renewed every second regardless
    (renewals that say the deadline, as a holder past it would if it ignored it)."""
    deadline = taking.at + timedelta(seconds=taking.deadline_s or 0)
    while True:
        await asyncio.sleep(1)
        renewal = LeaseRenewed(
            project=project,
            actor=SYSTEM,
            work="check",
            item=item,
            holder="stuck",
            ttl_s=taking.ttl_s,
            deadline=deadline,
        )
        try:
            seq = (await bus.publish_transition(renewal, seq)).seq
        except TransitionConflict:
            return  # taken over: what a real holder learns at its next renewal


async def test_a_waiter_takes_over_a_check_renewed_past_its_deadline(
    bus: Bus, project: str
) -> None:
    item = cache_key_digest(f"{project}|{KEY}")[:32]
    taking = LeaseTaken(
        project=project,
        actor=SYSTEM,
        work="check",
        item=item,
        holder="stuck",
        ttl_s=3,
        deadline_s=2,
    )
    ack = await bus.publish_transition(taking, 0)
    stuck = asyncio.create_task(renew_for_ever(bus, project, item, ack.seq, taking))
    flights = Flights(bus, SYSTEM, "waiter", ttl_s=3, sweep_s=0.5)

    async def nothing_shared(since: int) -> str | None:
        return None

    async def run() -> str:
        return "ran here"

    try:
        # Bounded only so a regression fails instead of hanging the suite.
        async with asyncio.timeout(60):
            assert await flights.once(project, KEY, nothing_shared, run) == "ran here"
    finally:
        stuck.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await stuck
    assert flights.waited == 1
    events = await wait_log(
        bus, project, lambda es: bool(of(LeaseReleased, es, holder="waiter")), 30
    )
    takings = [e for e in of(LeaseTaken, events) if e.item == item]
    assert [(t.holder, t.lapsed) for t in takings] == [("stuck", None), ("waiter", "stuck")]
    # The stuck holder was renewing when it was taken over: not a lapse by its ttl.
    renewals = [e for e in of(LeaseRenewed, events) if e.item == item]
    assert renewals and takings[1].at < renewals[-1].at + timedelta(seconds=3)


async def test_work_that_ignores_its_cancellation_still_lets_the_item_go(
    bus: Bus, project: str
) -> None:
    """A hang deaf to cancellation (a coroutine that swallows it) must not keep the holder:
    at the deadline the lease is released ``overran`` and the holder returns."""
    taking = LeaseTaken(
        project=project, actor=SYSTEM, work="check", item="deaf", holder="me", ttl_s=3
    )
    ack = await bus.publish_transition(taking, 0)
    deadline = taking.at + timedelta(seconds=1.5)
    held = Held(project, "check", "deaf", "me", 3, ack.seq, deadline)
    finished = asyncio.Event()

    async def deaf() -> None:
        while not finished.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0.2)

    try:
        async with asyncio.timeout(60):  # a regression fails here instead of hanging
            with pytest.raises(LeaseOverran):
                await holding(bus, SYSTEM, held, deaf())
    finally:
        finished.set()
    events = await wait_log(bus, project, lambda es: bool(of(LeaseReleased, es, item="deaf")), 30)
    [gave_up] = of(LeaseReleased, events, item="deaf")
    assert (gave_up.holder, gave_up.how) == ("me", "overran")
    assert all(r.at <= deadline for r in of(LeaseRenewed, events, item="deaf"))
