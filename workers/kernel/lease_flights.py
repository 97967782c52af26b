"""One run per (check, inputs, configuration) across every runner: a run in flight anywhere
is awaited, not started again.

Two asks for one tree (a unit's commit and the trunk request for the same tree, two
candidates sharing one) may be leased by different runners; each would then run the same
check. Before running a check, a runner takes the lease of its cache key
(``lease.check.<digest>``, a conditional publish as for every lease). A runner that finds
that lease live under another holder waits: it looks the result up in the cache until a
result newer than its wait appears (the other run's) and uses it, or until the lease is
released or lapses without one (the run erred, or its runner died), and then takes the
lease and runs the check itself. So a check is run twice only when the first run left no
result to share.

A run's result is published by its runner's kernel after the suite it belongs to returns,
so the lease is released ``done`` a moment before the result is on the log: a waiter that
finds the lease released ``done`` keeps looking the result up for up to the lease's
lifetime before it runs the check itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TypeVar

import structlog

from bus import Bus, TransitionConflict
from schemas import Actor, decode_event, utcnow
from schemas.gates import cache_key_digest
from schemas.leases import LeaseReleased, LeaseRenewed, LeaseTaken
from schemas.subjects import lease_subject
from workers.kernel.lease_holding import holding
from workers.leases.decide import Held

log = structlog.get_logger()

T = TypeVar("T")
POLL_S = 0.25


class Flights:
    """Check runs leased across runners (see the module docstring)."""

    def __init__(
        self, bus: Bus, actor: Actor, holder: str, ttl_s: float, *, poll_s: float = POLL_S
    ) -> None:
        self.bus = bus
        self.actor = actor
        self.holder = holder
        self.ttl_s = ttl_s
        self.poll_s = poll_s
        self.waited = 0
        """Check runs this runner awaited on another runner (the benchmark reads it)."""

    async def once(
        self,
        project: str,
        key: str,
        shared: Callable[[int], Awaitable[T | None]],
        run: Callable[[], Awaitable[T]],
    ) -> T:
        """``run()`` under the lease of ``key``, unless another runner holds it live: then
        the result ``shared(since)`` finds (one stored after stream sequence ``since``)."""
        item = cache_key_digest(f"{project}|{key}")[:32]
        subject = lease_subject(project, "check", item)
        since = await self.bus.stream_last_seq()
        counted = False
        while True:
            seq = await self.bus.last_subject_seq(subject)
            holder = await self._live_holder(seq) if seq else None
            if holder is not None and holder != self.holder:
                if not counted:
                    counted, self.waited = True, self.waited + 1
                    log.info("gate.check_in_flight", key=key, holder=holder)
                found = await shared(since)
                if found is not None:
                    return found
                await asyncio.sleep(self.poll_s)
                continue
            if counted:  # the run we waited on ended meanwhile: its result, if it left one
                found = await self._result_of_done(seq, since, shared)
                if found is not None:
                    return found
            taking = LeaseTaken(
                project=project,
                actor=self.actor,
                work="check",
                item=item,
                holder=self.holder,
                ttl_s=self.ttl_s,
                what=key.split("|", 1)[0],
                lapsed=await self._lapsed(seq),
            )
            try:
                ack = await self.bus.publish_transition(taking, seq)
            except TransitionConflict:
                continue  # another runner took it first: wait on it
            held = Held(project, "check", item, self.holder, self.ttl_s, ack.seq)
            return await holding(self.bus, self.actor, held, run())

    async def _result_of_done(
        self, seq: int, since: int, shared: Callable[[int], Awaitable[T | None]]
    ) -> T | None:
        """The result of the run just ended: looked up once, and while the lease's last
        event is a ``done`` release (its result follows it), for up to ``ttl_s``."""
        found = await shared(since)
        if found is not None or not seq:
            return found
        _subject, data = await self.bus.get(seq)
        event = decode_event(data)
        if not (isinstance(event, LeaseReleased) and event.how == "done"):
            return None
        deadline = asyncio.get_running_loop().time() + self.ttl_s
        while asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(self.poll_s)
            found = await shared(since)
            if found is not None:
                return found
        return None

    async def _last(self, seq: int) -> LeaseTaken | LeaseRenewed | None:
        """The lease event at ``seq`` if it holds the item (a taking or a renewal by the
        system); ``None`` for a release (the item is free)."""
        _subject, data = await self.bus.get(seq)
        event = decode_event(data)
        if isinstance(event, LeaseTaken | LeaseRenewed) and event.actor.role == "system":
            return event
        return None

    async def _live_holder(self, seq: int) -> str | None:
        last = await self._last(seq)
        if last is None or utcnow() >= last.at + timedelta(seconds=last.ttl_s):
            return None
        return last.holder

    async def _lapsed(self, seq: int) -> str | None:
        """The holder a taking at ``seq`` takes over from (its lease ran out), if any."""
        if not seq:
            return None
        last = await self._last(seq)
        return last.holder if last is not None else None
