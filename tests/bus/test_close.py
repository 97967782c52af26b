"""Closing a connection ends even when a subscription will not drain: nats-py's drain waits
up to 30 s for a subscription's callback, and a command stopped by Ctrl-C (``loopbus tail``)
must not hang that long on its way out."""

from __future__ import annotations

import asyncio

from bus import connect
from bus.connection import CLOSE_DRAIN_S


async def test_close_ends_though_a_subscription_never_drains(nats_url: str) -> None:
    bus = await connect(nats_url)
    stuck = asyncio.Event()

    async def never_returns(_msg: object) -> None:
        await stuck.wait()  # a callback that never finishes: the subscription cannot drain

    bus.nc.options["drain_timeout"] = 3600  # nats-py would wait this long for the drain
    await bus.nc.subscribe("close.test", cb=never_returns)
    await bus.nc.publish("close.test", b"x")
    await bus.nc.flush()
    closing = asyncio.ensure_future(bus.close())
    # A liveness bound, far above CLOSE_DRAIN_S: a close that waited for the drain would
    # still be running (asyncio.wait does not cancel it; nats-py's drain swallows a cancel).
    done, _ = await asyncio.wait({closing}, timeout=CLOSE_DRAIN_S * 4)
    stuck.set()
    if not done:
        await bus.nc.close()
    assert closing in done, "close() waited for a subscription that cannot drain"
    assert bus.nc.is_closed
