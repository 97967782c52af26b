"""The log's guarantees: immutable, de-duplicated, conditional, atomic, pipelined."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import msgspec
import pytest
from nats.js.api import StreamConfig
from nats.js.errors import APIError

from bus import (
    LOG_STREAM,
    Bus,
    EmbeddedServer,
    TransitionConflict,
    connect,
    ensure_log,
    free_port,
    publisher,
    read,
)
from schemas import (
    Actor,
    Block,
    Event,
    FindingRaised,
    InvalidEvent,
    UnitPlanned,
    UnitTransitioned,
    parse_target,
    project_subjects,
)


def finding(project: str, line: int = 1, message: str = "m") -> FindingRaised:
    return FindingRaised(
        project=project,
        actor=Actor(role="reviewer", principal="r1"),
        producer="reviewer",
        target=parse_target(f"code:a.py:{line}-{line}"),
        severity="low",
        message=message,
    )


async def project_events(bus: Bus, project: str) -> list[tuple[int, Event | None]]:
    return [(r.seq, r.event) async for r in read(bus, subjects=[project_subjects(project)])]


async def test_publish_then_read_back(bus: Bus, project: str) -> None:
    """An event published to the log reads back equal, at the sequence its ack named."""
    event = finding(project)
    ack = await bus.publish(event)
    assert await project_events(bus, project) == [(ack.seq, event)]


async def test_server_refuses_purge(bus: Bus, project: str) -> None:
    """The server itself refuses to purge the log (DenyPurge), so history cannot be erased."""
    await bus.publish(finding(project))
    before = await bus.stream_last_seq()
    with pytest.raises(APIError, match="purge not permitted"):
        await bus.js.purge_stream(LOG_STREAM)
    info = await bus.stream_info()
    assert info.state.last_seq >= before and info.state.first_seq == 1


async def test_server_refuses_delete(bus: Bus, project: str) -> None:
    """The server refuses to delete a message (DenyDelete); the event is still there after."""
    event = finding(project)
    ack = await bus.publish(event)
    with pytest.raises(APIError, match="delete not permitted"):
        await bus.js.delete_msg(LOG_STREAM, ack.seq)
    assert await project_events(bus, project) == [(ack.seq, event)]


async def test_same_event_twice_is_stored_once(bus: Bus, project: str) -> None:
    """Publishing the same event again (a retry) is acked as a duplicate and stored once."""
    event = finding(project)
    first = await bus.publish(event)
    second = await bus.publish(event)
    assert (second.seq, second.duplicate) == (first.seq, True)
    assert await project_events(bus, project) == [(first.seq, event)]


async def test_pipelined_batch_stores_each_event_once_in_order(bus: Bus, project: str) -> None:
    """publish_many stores every event once, in order, even when some were sent before."""
    events = [finding(project, line=i + 1) for i in range(500)]
    await bus.publish_many(events[:100])
    acks = await bus.publish_many(events)
    assert [a.duplicate for a in acks[:100]] == [True] * 100
    assert not any(a.duplicate for a in acks[100:])
    stored = await project_events(bus, project)
    assert [event for _, event in stored] == events


async def test_big_events_go_out_in_writes_of_bounded_size(
    bus: Bus, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write holds at most CHUNK frames or about CHUNK_BYTES of payload, whichever comes
    first, and the events are stored once each, in order, all the same."""
    monkeypatch.setattr(publisher, "CHUNK_BYTES", 20_000)
    writes: list[int] = []
    send = bus.wire.send

    async def counted(frames: list[publisher.Frame]) -> None:
        writes.append(sum(len(frame[3]) for frame in frames))
        await send(frames)

    monkeypatch.setattr(bus.wire, "send", counted)
    events = [finding(project, line=i + 1, message="x" * 5_000) for i in range(40)]
    await bus.publish_many(events)
    stored = await project_events(bus, project)
    assert [event for _, event in stored] == events
    # Each payload is a little over 5,000 bytes: a write closes at its fourth.
    assert len(writes) >= 10
    assert max(writes) < 20_000 + 6_000


async def test_a_repeated_transition_is_stored_once(bus: Bus, project: str, system: Actor) -> None:
    """The same transition sent again (as after a lost ack) is never stored twice: a single
    server answers it as a conflict, and the writer that re-reads finds its own event."""
    planned = UnitPlanned(project=project, actor=system, unit="U1", slice="S1")
    first = await bus.publish_transition(planned, 0)
    with pytest.raises(TransitionConflict):
        await bus.publish_transition(planned, 0)
    assert await project_events(bus, project) == [(first.seq, planned)]


async def test_racing_transitions_exactly_one_wins(bus: Bus, project: str, system: Actor) -> None:
    """Two writers racing on one unit from the same read: one is stored, one gets a conflict."""
    planned = UnitPlanned(project=project, actor=system, unit="U1", slice="S1")
    ack = await bus.publish(planned)
    expected = await bus.last_subject_seq(f"loop.{project}.unit.U1")
    assert expected == ack.seq
    working = UnitTransitioned(project=project, actor=system, unit="U1", state="working")
    blocked = UnitTransitioned(
        project=project,
        actor=system,
        unit="U1",
        state="blocked",
        block=Block(reason="awaiting-gate", subject="tests"),
    )
    results = await asyncio.gather(
        bus.publish_transition(working, expected),
        bus.publish_transition(blocked, expected),
        return_exceptions=True,
    )
    conflicts = [r for r in results if isinstance(r, TransitionConflict)]
    winners = [r for r in results if not isinstance(r, BaseException)]
    assert len(conflicts) == 1 and len(winners) == 1
    assert conflicts[0].expected == expected
    stored = [event for _, event in await project_events(bus, project)]
    assert stored[0] == planned and len(stored) == 2
    assert stored[1] in (working, blocked)


async def test_transition_on_empty_subject_expects_zero(
    bus: Bus, project: str, system: Actor
) -> None:
    """Expected sequence 0 means 'nothing on this subject yet': a second such write conflicts."""
    first = UnitPlanned(project=project, actor=system, unit="U9", slice="S1")
    second = UnitPlanned(project=project, actor=system, unit="U9", slice="S2")
    await bus.publish_transition(first, 0)
    with pytest.raises(TransitionConflict, match="another writer got there first"):
        await bus.publish_transition(second, 0)


async def test_atomic_batch_is_stored_contiguously(bus: Bus, project: str) -> None:
    """An atomic batch lands whole, at consecutive sequences, in the order given."""
    events = [finding(project, line=i + 1) for i in range(5)]
    acks = await bus.publish_atomic(events)
    assert [a.seq for a in acks] == list(range(acks[0].seq, acks[0].seq + 5))
    stored = await project_events(bus, project)
    assert stored == list(zip([a.seq for a in acks], events, strict=True))


async def test_an_event_that_would_not_decode_is_never_published(bus: Bus, project: str) -> None:
    """An event built in code that breaks a decode-time rule is refused before it is sent,
    so nothing on the log can be quarantined by its own writer."""
    bad = UnitPlanned(
        project="not a token", actor=Actor(role="system", principal="t"), unit="U1", slice="S1"
    )
    with pytest.raises(InvalidEvent, match="project"):
        await bus.publish(bad)
    with pytest.raises(InvalidEvent, match="project"):
        await bus.publish_many([bad, finding(project)])
    assert await project_events(bus, project) == []


async def test_publish_many_stops_at_a_refused_event_and_stores_what_came_before(
    bus: Bus, project: str
) -> None:
    """publish_many checks each event just before sending it: one that would not decode,
    far into a large call, ends the call there. Every event before it is stored once, in
    order, and acknowledged before the error is raised; it and every event after it are
    not stored; the error says so. Publishing the corrected call again stores the rest once.
    """
    events: list[Event] = [finding(project, line) for line in range(1, 6001)]
    good = events[4321]
    events[4321] = msgspec.structs.replace(good, severity="not-a-severity")
    with pytest.raises(InvalidEvent, match="severity") as refused:
        await bus.publish_many(events)
    assert any("the 4321 before it are stored" in note for note in refused.value.__notes__)
    stored = await project_events(bus, project)
    assert [event.id for _, event in stored if event] == [e.id for e in events[:4321]]
    events[4321] = good
    acks = await bus.publish_many(events)
    assert [a.seq for a in acks[:4321]] == [seq for seq, _ in stored]
    assert all(a.duplicate for a in acks[:4321]) and not any(a.duplicate for a in acks[4321:])
    assert [e.id for _, e in await project_events(bus, project) if e] == [e.id for e in events]


async def test_provisioning_restores_the_log_guarantees() -> None:
    """ensure_log on an existing stream without DenyDelete/DenyPurge turns them on rather
    than reporting an immutable log it does not have."""
    server_dir = tempfile.mkdtemp()
    server = EmbeddedServer(Path(server_dir), port=free_port(), auth=None)
    await server.start()
    own = await connect(server.url, name="provision-test")
    try:
        await own.js.add_stream(StreamConfig(name=LOG_STREAM, subjects=["loop.>"]))
        await ensure_log(own.js)
        config = (await own.js.stream_info(LOG_STREAM)).config
        assert config.deny_delete and config.deny_purge
        with pytest.raises(APIError, match="purge not permitted"):
            await own.js.purge_stream(LOG_STREAM)
    finally:
        await own.close()
        server.stop()
