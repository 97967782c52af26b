"""Riding through a server restart: readers recover on reconnection, calls retry, and a
server that stays away ends in one clear error."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from bus import (
    PROJECTION_BUCKET,
    Bus,
    EmbeddedServer,
    PublishFailed,
    connect,
    ensure_log,
    free_port,
    read,
    reader,
)
from bus.errors import ServerUnavailable
from bus.retry import Backoff
from schemas import Actor, Event, FindingRaised, parse_target

REVIEWER = Actor(role="reviewer", principal="r1")


def findings(count: int) -> list[FindingRaised]:
    return [
        FindingRaised(
            project="r",
            actor=REVIEWER,
            producer="reviewer",
            target=parse_target(f"code:a.py:{i + 1}-{i + 1}"),
            severity="low",
            message="m",
        )
        for i in range(count)
    ]


@pytest_asyncio.fixture(loop_scope="session")
async def own_server(tmp_path: Path) -> AsyncIterator[EmbeddedServer]:
    """A server of this test's own, which the test may stop and restart."""
    server = EmbeddedServer(tmp_path / "nats", port=free_port(), auth=None)
    await server.start()
    yield server
    server.stop()


@pytest_asyncio.fixture(loop_scope="session")
async def own_bus(own_server: EmbeddedServer) -> AsyncIterator[Bus]:
    bus = await connect(own_server.url, name="recovery-test")
    await ensure_log(bus.js)
    yield bus
    await bus.close()


async def restart(server: EmbeddedServer) -> None:
    server.stop()
    await server.start()


@pytest.mark.slow
async def test_a_follower_recovers_on_reconnection_not_on_silence(
    own_server: EmbeddedServer, own_bus: Bus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the silence rule pushed out to an hour, a follower whose server restarts still
    delivers the events published after the restart, in order, none twice: it re-created
    its consumer when the client reconnected. The publishes after the restart go through
    without a retry loop of the test's own."""
    monkeypatch.setattr(reader, "SILENCE_S", 3600.0)
    before, after = findings(3), findings(2)
    await own_bus.publish_many(before)
    seen: list[Event] = []
    got_three, got_all = asyncio.Event(), asyncio.Event()

    async def follow() -> None:
        async for record in read(own_bus, subjects=["loop.r.>"], follow=True):
            assert record.event is not None
            seen.append(record.event)
            if len(seen) == 3:
                got_three.set()
            if len(seen) == 5:
                got_all.set()

    follower = asyncio.create_task(follow())
    try:
        async with asyncio.timeout(60):
            await got_three.wait()
            reconnects = own_bus.reconnects.count
            await restart(own_server)
            for event in after:
                await own_bus.publish(event)
            await got_all.wait()
        assert own_bus.reconnects.count > reconnects
        assert seen == before + after
    finally:
        follower.cancel()


@pytest.mark.slow
async def test_kv_and_stream_calls_retry_through_a_restart(
    own_server: EmbeddedServer, own_bus: Bus
) -> None:
    """A KV put, a KV get and a stream-info call made while the server is down answer once
    it is back, instead of raising."""
    kv = await own_bus.bucket(PROJECTION_BUCKET)
    await kv.put("k", b"1")
    own_server.stop()
    put = asyncio.create_task(kv.put("k", b"2"))
    info = asyncio.create_task(own_bus.stream_last_seq())
    await asyncio.sleep(0.5)  # let the calls start while nothing listens
    await own_server.start()
    async with asyncio.timeout(60):
        await put
        entry = await kv.get("k")
        assert entry is not None and entry.value == b"2"
        assert await info >= 0


@pytest.mark.slow
async def test_a_server_that_stays_away_ends_in_one_clear_error(
    own_server: EmbeddedServer, own_bus: Bus
) -> None:
    """When the server does not come back within the back-off budget, a read call raises
    ServerUnavailable and a publish raises PublishFailed, each naming what went unanswered."""
    own_bus.backoff = Backoff(budget=1.0)
    own_server.stop()
    with pytest.raises(ServerUnavailable, match=r"stream info LOOP: no answer from NATS for 1 s"):
        await own_bus.stream_info()
    with pytest.raises(
        PublishFailed, match=r"loop\.r\.claim\.reviewer\.r1\.finding\.reviewer.*no answer from NATS"
    ):
        await own_bus.publish(findings(1)[0])
