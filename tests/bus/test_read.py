"""Reading the log back: nothing lost however slow the reader, bounds honoured."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from logkit import findings

from bus import Bus, EmbeddedServer, connect, ensure_log, free_port, read, reader
from schemas import Event, encode_event, project_subjects


@pytest.mark.slow
async def test_a_stalled_reader_loses_nothing(bus: Bus, project: str) -> None:
    """A reader that stalls while the server pushes more than nats-py's default queue holds
    still receives every event, in order (a dropped message would be silent data loss)."""
    count = 80_000
    await bus.publish_many(findings(project, count, message="x" * 400))
    seqs: list[int] = []
    async for record in read(bus, subjects=[project_subjects(project)]):
        if not seqs:
            await asyncio.sleep(3)  # let the server push as much as it will
        seqs.append(record.seq)
    assert len(seqs) == count
    assert seqs == sorted(seqs) and len(set(seqs)) == count


async def test_until_seq_stops_there(bus: Bus, project: str) -> None:
    """read(until_seq=N) yields nothing past N."""
    acks = await bus.publish_many(findings(project, 10))
    got = [
        r.seq async for r in read(bus, subjects=[project_subjects(project)], until_seq=acks[4].seq)
    ]
    assert got == [a.seq for a in acks[:5]]


async def test_start_seq_skips_earlier_events(bus: Bus, project: str) -> None:
    """read(start_seq=N) begins at N."""
    acks = await bus.publish_many(findings(project, 6))
    got = [
        r.seq async for r in read(bus, subjects=[project_subjects(project)], start_seq=acks[3].seq)
    ]
    assert got == [a.seq for a in acks[3:]]


async def test_empty_filter_returns_at_once(bus: Bus, project: str) -> None:
    """Reading a project with no events ends immediately instead of waiting for one."""
    async with asyncio.timeout(10):
        assert [r async for r in read(bus, subjects=[project_subjects(project)])] == []


@pytest.mark.slow
async def test_a_follower_survives_a_server_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A following reader whose server restarts (losing its in-memory consumer) resumes
    after the last event it handed out: it neither hangs nor skips nor repeats."""
    monkeypatch.setattr(reader, "SILENCE_S", 1.0)
    server = EmbeddedServer(tmp_path / "nats", port=free_port(), auth=None)
    await server.start()
    own = await connect(server.url, name="restart-test")
    try:
        await ensure_log(own.js)
        before = findings("r", 3)
        await own.publish_many(before)
        seen: list[Event] = []
        got_three, got_all = asyncio.Event(), asyncio.Event()

        async def follow() -> None:
            async for record in read(own, subjects=["loop.r.>"], follow=True):
                assert record.event is not None
                seen.append(record.event)
                if len(seen) == 3:
                    got_three.set()
                if len(seen) == 5:
                    got_all.set()

        follower = asyncio.create_task(follow())
        async with asyncio.timeout(30):
            await got_three.wait()
            server.stop()
            await server.start()
            after = findings("r", 2)
            for event in after:  # the client reconnects on its own; retry until it has
                while True:
                    try:
                        await own.publish(event)
                        break
                    except Exception:
                        await asyncio.sleep(0.2)
            await got_all.wait()
        follower.cancel()
        assert seen == before + after
    finally:
        await own.close()
        server.stop()


async def test_an_event_filed_under_another_project_is_not_folded(bus: Bus, project: str) -> None:
    """An event whose project differs from its subject's is yielded as an error, so it can
    never fold into one project in the projector and into another in a replay."""
    stray = findings("elsewhere", 1)[0]
    await bus.js.publish(f"loop.{project}.finding.reviewer", encode_event(stray))
    [record] = [r async for r in read(bus, subjects=[project_subjects(project)])]
    assert record.event is None and record.error is not None
    assert record.error.field == "project" and "belongs on loop.elsewhere" in str(record.error)
