"""One run per (check, inputs, configuration) across every runner: a run in flight anywhere
is awaited, not started again.

Two asks for one tree (a unit's commit and the trunk request for the same tree, two
candidates sharing one) may be leased by different runners; each would then run the same
check. Before running a check, a runner takes the lease of its cache key
(``lease.check.<digest>``, a conditional publish as for every lease). A runner that finds
that lease live under another holder waits: it looks the result up in the cache until a
result newer than its wait appears (the other run's) and uses it, or until the lease is
released or lapses without one (the run erred, or its runner died), or runs past the
deadline its taking gives (its runner is stuck), and then takes the lease and runs the
check itself. So a check is run twice only when the first run left no
result to share.

A run's result is published by its runner's kernel after the suite it belongs to returns,
so the lease is released ``done`` a moment before the result is on the log: a waiter that
finds the lease released ``done`` keeps looking the result up for up to the lease's
lifetime before it runs the check itself.

A waiter does not poll: it follows the project's gate results and the lease's subject and
looks again when something lands there (the result it waits for, a renewal, the release).
A slow sweep (``sweep_s``) stays for what no event announces: a lease that lapses because
its holder died.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import TypeVar

import structlog

from bus import Bus, TransitionConflict, read
from projections.intents import Held
from schemas import Actor, decode_event, utcnow
from schemas.gates import cache_key_digest
from schemas.leases import LeaseReleased, LeaseRenewed, LeaseTaken
from schemas.subjects import gate_subjects, lease_subject
from workers.kernel.lease_holding import holding
from workers.runtime import cancel_all

log = structlog.get_logger()

T = TypeVar("T")
SWEEP_S = 2.0


class Arrivals:
    """Wakes a waiter whenever a record lands on ``subjects`` after ``after`` (the log is
    followed by a task of its own until :meth:`close`); :meth:`wait` returns at the next
    arrival, or after ``timeout`` at the latest."""

    def __init__(self, bus: Bus, subjects: Sequence[str], after: int) -> None:
        self.arrived = asyncio.Event()
        self.task = asyncio.create_task(self._follow(bus, subjects, after))

    async def _follow(self, bus: Bus, subjects: Sequence[str], after: int) -> None:
        try:
            async for _record in read(bus, subjects=subjects, start_seq=after + 1, follow=True):
                self.arrived.set()
        except Exception as exc:  # the sweep still wakes the waiter: slower, never stuck
            log.warning("gate.flight_watch_failed", error=repr(exc))

    async def wait(self, timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self.arrived.wait()
        self.arrived.clear()  # what lands from here on wakes the next wait

    async def close(self) -> None:
        # Cancelled until it ends: a follow reader may lose one cancel inside a request.
        await cancel_all([self.task])


class Flights:
    """Check runs leased across runners (see the module docstring)."""

    def __init__(
        self, bus: Bus, actor: Actor, holder: str, ttl_s: float, *, sweep_s: float = SWEEP_S
    ) -> None:
        self.bus = bus
        self.actor = actor
        self.holder = holder
        self.ttl_s = ttl_s
        self.sweep_s = sweep_s
        self.waited = 0
        """Check runs this runner awaited on another runner (the benchmark reads it)."""

    async def once(
        self,
        project: str,
        key: str,
        shared: Callable[[int], Awaitable[T | None]],
        run: Callable[[], Awaitable[T]],
        *,
        deadline_s: float | None = None,
    ) -> T:
        """``run()`` under the lease of ``key``, unless another runner holds it live: then
        the result ``shared(since)`` finds (one stored after stream sequence ``since``).
        ``deadline_s``: the run is given up that long after the taking (the check's own
        timeout plus a margin), and a waiter takes over a run past its deadline."""
        item = cache_key_digest(f"{project}|{key}")[:32]
        subject = lease_subject(project, "check", item)
        since = await self.bus.stream_last_seq()
        arrivals: Arrivals | None = None  # started at the first wait: most runs never wait
        try:
            while True:
                seq = await self.bus.last_subject_seq(subject)
                holder = await self._live_holder(seq) if seq else None
                if holder is not None and holder != self.holder:
                    if arrivals is None:
                        self.waited += 1
                        log.info("gate.check_in_flight", key=key, holder=holder)
                        watched = [*gate_subjects(project), subject]
                        arrivals = Arrivals(self.bus, watched, since)
                    found = await shared(since)
                    if found is not None:
                        return found
                    await arrivals.wait(self.sweep_s)
                    continue
                if arrivals is not None:  # the run we waited on ended: its result, if any
                    found = await self._result_of_done(seq, since, shared, arrivals)
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
                    deadline_s=deadline_s,
                )
                try:
                    ack = await self.bus.publish_transition(taking, seq)
                except TransitionConflict:
                    continue  # another runner took it first: wait on it
                until = None if deadline_s is None else taking.at + timedelta(seconds=deadline_s)
                held = Held(project, "check", item, self.holder, self.ttl_s, ack.seq, until)
                return await holding(self.bus, self.actor, held, run())
        finally:
            if arrivals is not None:
                await arrivals.close()

    async def _result_of_done(
        self,
        seq: int,
        since: int,
        shared: Callable[[int], Awaitable[T | None]],
        arrivals: Arrivals,
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
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.ttl_s
        while loop.time() < deadline:
            await arrivals.wait(min(self.sweep_s, max(deadline - loop.time(), 0.0)))
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
        """The holder of the lease whose last event is at ``seq``, while it is renewed in
        time and not past its deadline: a holder that keeps renewing a run past its
        deadline is stuck, and waiting on it would leave this suite stuck too."""
        last = await self._last(seq)
        now = utcnow()
        if last is None or now >= last.at + timedelta(seconds=last.ttl_s):
            return None
        deadline = last.deadline if isinstance(last, LeaseRenewed) else None
        if isinstance(last, LeaseTaken) and last.deadline_s is not None:
            deadline = last.at + timedelta(seconds=last.deadline_s)
        if deadline is not None and now >= deadline:
            log.warning("gate.flight_overran", holder=last.holder, deadline=str(deadline))
            return None
        return last.holder

    async def _lapsed(self, seq: int) -> str | None:
        """The holder a taking at ``seq`` takes over from (its lease ran out), if any."""
        if not seq:
            return None
        last = await self._last(seq)
        return last.holder if last is not None else None
