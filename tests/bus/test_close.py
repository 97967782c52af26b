"""Closing a connection ends even when a subscription will not drain: nats-py's drain waits
up to 30 s for a subscription's callback, and a command stopped by Ctrl-C (``loopbus tail``)
must not hang that long on its way out."""

from __future__ import annotations

import asyncio
import contextlib
import gc

from bus import Bus, connect
from bus.connection import CLOSE_DRAIN_S


async def undrainable(nats_url: str, subject: str) -> tuple[Bus, asyncio.Event]:
    """A connection with a message in a subscription whose callback never finishes until
    the event returned is set: that subscription cannot drain."""
    bus = await connect(nats_url)
    stuck = asyncio.Event()

    async def never_returns(_msg: object) -> None:
        await stuck.wait()

    await bus.nc.subscribe(subject, cb=never_returns)
    await bus.nc.publish(subject, b"x")
    await bus.nc.flush()
    return bus, stuck


async def test_close_ends_though_a_subscription_never_drains(nats_url: str) -> None:
    bus, stuck = await undrainable(nats_url, "close.test")
    closing = asyncio.ensure_future(bus.close())
    # A liveness bound, far above CLOSE_DRAIN_S: a close that waited for the drain would
    # still be running (asyncio.wait does not cancel it).
    done, _ = await asyncio.wait({closing}, timeout=CLOSE_DRAIN_S * 4)
    stuck.set()
    if not done:
        await bus.nc.close()
    assert closing in done, "close() waited for a subscription that cannot drain"
    assert bus.nc.is_closed


async def test_a_close_cut_short_leaves_nothing_for_the_loop_to_report(nats_url: str) -> None:
    """A drain cut short must not leave a future whose exception nobody read: asyncio prints
    such a future with a traceback whenever it is collected, and a daemon stopped by Ctrl-C
    then ends with a traceback on its stderr (seen in CI on a log with a long backlog)."""
    loop = asyncio.get_running_loop()
    reported: list[dict[str, object]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        bus, stuck = await undrainable(nats_url, "close.unread")
        await bus.close()
        stuck.set()
        assert bus.nc.is_closed
        await asyncio.sleep(0)  # let callbacks of what close() cancelled run
        gc.collect()  # a future's unread exception is reported when it is collected
    finally:
        loop.set_exception_handler(previous)
    assert [c.get("message") for c in reported] == [], reported


async def test_a_close_cancelled_while_it_drains_still_closes(nats_url: str) -> None:
    """Ctrl-C can land while a close is draining: the connection is closed all the same,
    not left open with its reader and flusher running (an independent review's case)."""
    bus, stuck = await undrainable(nats_url, "close.cancelled")
    closing = asyncio.ensure_future(bus.close())
    await asyncio.sleep(0.2)  # inside the drain, which cannot finish
    assert not closing.done()
    closing.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await closing
    stuck.set()
    assert bus.nc.is_closed
