"""One process's repositories run side by side (:func:`workers.served.run_each`): a crash
of one stops the others and is re-raised, so the process exits non-zero and is started
again whole, as a daemon of one repository is."""

from __future__ import annotations

import asyncio

import pytest

from bus import Bus
from workers.runtime import DaemonContext
from workers.served import Body, run_each


async def test_one_repository_crashing_stops_the_others_and_is_raised(bus: Bus) -> None:
    ctx = DaemonContext(bus=bus, name="tests")
    ended: list[str] = []

    async def steady(ctx: DaemonContext) -> None:
        try:
            await ctx.stop.wait()
        finally:
            ended.append("steady")

    async def crashing(ctx: DaemonContext) -> None:
        await asyncio.sleep(0.05)
        raise RuntimeError("kernel of b crashed")

    with pytest.raises(RuntimeError, match="kernel of b crashed"):
        await asyncio.wait_for(run_each(ctx, {"a": steady, "b": crashing}), 10)
    assert ended == ["steady"]


async def test_the_stop_ends_every_repository_cleanly(bus: Bus) -> None:
    ctx = DaemonContext(bus=bus, name="tests")
    seen: list[str] = []

    def body(name: str) -> Body:
        async def run(ctx: DaemonContext) -> None:
            await ctx.stop.wait()
            seen.append(name)

        return run

    asyncio.get_running_loop().call_later(0.05, ctx.stop.set)
    await asyncio.wait_for(run_each(ctx, {"a": body("a"), "b": body("b")}), 10)
    assert sorted(seen) == ["a", "b"]
