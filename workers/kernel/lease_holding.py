"""Holding a lease while its work runs: renew it, stop the work if it was lost, release it.

The shell half of leasing (the pure half is :mod:`workers.leases.decide`); in the
kernel package because renewing and releasing publish, and only the kernel publishes. Each
renewal and the release are published conditionally on the item's lease subject, at the
sequence of this holder's own last lease event there: a renewal that finds the subject
moved means another replica took the item over (this one was too slow to renew, or
paused), so the work is cancelled at once rather than finished a second time. A process
killed mid-item renews nothing; its lease runs out ``ttl_s`` after the last renewal and
another replica takes the item. A process alive but stuck would renew for ever, so a held
item has a deadline (``Held.deadline``, on the log with the taking): there the holder stops
renewing, cancels the work and releases the item ``overran``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import TypeVar

import structlog

from bus import Bus, BusError, TransitionConflict
from bus.cancel import raise_if_cancelled
from projections.intents import Effect, Held, Intent, PublishIf
from schemas import Actor, utcnow
from schemas.leases import LeaseReleased, LeaseRenewed, Released
from workers.runtime import cancel_all

log = structlog.get_logger()

T = TypeVar("T")
Asked = TypeVar("Asked", bound=Intent)

RENEWALS_PER_TTL = 3
"""Renewals per lease lifetime: two can be lost (a slow bus) before the lease lapses."""
RELEASE_WAIT_S = 2.0


CANCEL_WAIT_S = 5.0
"""How long a cancelled work may take to end before the holder lets the item go anyway."""


class LeaseLost(Exception):
    """Another replica took the item over while this one worked on it."""


class LeaseOverran(Exception):
    """The work ran past the lease's deadline: cancelled, and the item released."""


async def holding(bus: Bus, actor: Actor, held: Held, work: Awaitable[T]) -> T:
    """Run ``work`` under ``held``: renewed every ``ttl_s / 3``; released ``done`` when it
    returns, ``given-up`` when it raises or is cancelled, ``overran`` when it still runs at
    ``held.deadline`` (cancelled; raises :class:`LeaseOverran`). Raises :class:`LeaseLost`
    (the work cancelled) when a renewal finds the item taken over. For work whose result is
    on the log when it returns (a gate suite)."""
    result, last = await held_until_answered(bus, actor, held, work)
    await _release(bus, actor, held, last, "done")
    return result


def release(actor: Actor, held: Held, seq: int) -> PublishIf:
    """The release of ``held`` (last lease event at ``seq``) as an intent: for work whose
    answer is intents the kernel publishes (a builder round), put after them, so the item
    is free again only once its answer is on the log."""
    released = LeaseReleased(
        project=held.project, actor=actor, work=held.work, item=held.item, holder=held.holder
    )
    return PublishIf(released, seq)


async def held_until_answered(
    bus: Bus, actor: Actor, held: Held, work: Awaitable[T]
) -> tuple[T, int]:
    """Like :func:`holding`, but a lease whose work returned is not released: returns the
    result and the sequence of the last lease event (for :func:`release`). Raises
    :class:`LeaseOverran` (the work cancelled, the lease released ``overran``) when the
    work is still running at ``held.deadline``."""
    seq = [held.seq]
    task = asyncio.ensure_future(work)
    renewing = asyncio.create_task(_renew(bus, actor, held, seq))
    how: Released = "given-up"
    try:
        # Not ``await task``: a stuck work may never end, not even when cancelled.
        await asyncio.wait({task, renewing}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            result = task.result()  # its exception, if it raised, goes to the caller
            await cancel_all([renewing])  # first: a renewal in flight moves the last seq
            how = "done"  # only now: a holder cancelled meanwhile gives the item up
            return result, seq[0]
        ended = renewing.result()
        how = ended
        await _cancel(task, held)
        if ended == "lost":
            raise LeaseLost(f"lease of {held.work} item {held.item} was taken over")
        log.warning("lease.overran", work=held.work, item=held.item, holder=held.holder, seq=seq[0])
        raise LeaseOverran(f"{held.work} item {held.item} ran past its deadline {held.deadline}")
    finally:
        try:
            # Cancelled again until it ends, not awaited after one cancel: a cancel that
            # lands as a renewal's ack arrives is lost on Python 3.11 (``cancel_all``), and
            # the renewals then went on until the deadline, holding a finished suite's
            # answer back with them (27 of 1,000 units of the 100-repositories-in-one-
            # process benchmark).
            if not renewing.done():
                await cancel_all([renewing])
        finally:  # the holder itself cancelled meanwhile still stops the work, lets go
            if not task.done():
                task.cancel()
            if how in ("given-up", "overran"):
                # Shielded: a daemon stopping mid-item still hands the item on at once.
                await asyncio.shield(_release(bus, actor, held, seq[0], how))


async def _cancel(task: asyncio.Future[T], held: Held) -> None:
    """Cancel ``task`` and give it ``CANCEL_WAIT_S`` to end: one that ignores the
    cancellation is left behind (logged) rather than waited on."""
    task.cancel()
    done, _pending = await asyncio.wait({task}, timeout=CANCEL_WAIT_S)
    if not done:
        log.warning("lease.work_not_cancelled", work=held.work, item=held.item)
    elif not task.cancelled() and task.exception() is not None:
        log.info("lease.work_ended", work=held.work, error=repr(task.exception()))


async def _renew(bus: Bus, actor: Actor, held: Held, seq: list[int]) -> Released:
    """Renew ``held`` every ``ttl_s / 3`` until its deadline (``overran``) or until a
    renewal finds it taken over (``lost``)."""
    every = held.ttl_s / RENEWALS_PER_TTL
    loop = asyncio.get_running_loop()
    stop: float | None = None
    if held.deadline is not None:
        stop = loop.time() + (held.deadline - utcnow()).total_seconds()
    while True:
        if stop is not None and loop.time() >= stop:
            return "overran"
        await asyncio.sleep(every if stop is None else max(min(every, stop - loop.time()), 0))
        if stop is not None and loop.time() >= stop:
            return "overran"  # no renewal past the deadline: it would claim time it lacks
        renewal = LeaseRenewed(
            project=held.project,
            actor=actor,
            work=held.work,
            item=held.item,
            holder=held.holder,
            ttl_s=held.ttl_s,
            deadline=held.deadline,
        )
        try:
            ack = await bus.publish_transition(renewal, seq[0])
        except TransitionConflict:
            log.warning("lease.lost", work=held.work, item=held.item, holder=held.holder)
            return "lost"
        except BusError as exc:  # the next renewal may get through before the lease lapses
            log.warning("lease.renew_failed", work=held.work, item=held.item, error=str(exc))
            continue
        seq[0] = ack.seq
        raise_if_cancelled()  # a stop that the publish swallowed ends the renewals here


async def _release(bus: Bus, actor: Actor, held: Held, seq: int, how: Released) -> None:
    released = LeaseReleased(
        project=held.project,
        actor=actor,
        work=held.work,
        item=held.item,
        holder=held.holder,
        how=how,
    )
    try:
        async with asyncio.timeout(RELEASE_WAIT_S):
            await bus.publish_transition(released, seq)
    except TransitionConflict:
        pass  # taken over meanwhile: the new holder's lease stands
    except (BusError, TimeoutError) as exc:  # it lapses instead
        log.warning("lease.release_failed", work=held.work, item=held.item, error=str(exc))


async def answered_under_lease(
    bus: Bus, actor: Actor, effect: Effect, work: Awaitable[Sequence[Asked]]
) -> list[Asked | PublishIf]:
    """The intents ``work`` answers ``effect`` with, run under the effect's lease when it
    has one (``effect.lease``), its release put after them; nothing when the lease
    was lost (another replica does the work now). For a daemon whose work answers with
    intents (a builder round; a review or an investigation the same way)."""
    held: Held | None = effect.lease
    if held is None:
        return list(await work)
    try:
        answer, seq = await held_until_answered(bus, actor, held, work)
    except (LeaseLost, LeaseOverran):
        return []
    return [*answer, release(actor, held, seq)]
