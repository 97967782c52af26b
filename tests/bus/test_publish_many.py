"""publish_many: exact acknowledgements on the fast path and without it, and nothing lost or
stored twice when the server restarts in the middle."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from logkit import findings
from nats.aio.msg import Msg

from bus import (
    Bus,
    EmbeddedServer,
    LogNotProvisioned,
    connect,
    ensure_log,
    free_port,
    read,
)
from bus.publisher import Ack, Acks
from bus.wire import Wire
from schemas import project_subjects


async def stored_ids(bus: Bus, project: str) -> list[str]:
    return [r.event.id async for r in read(bus, subjects=[project_subjects(project)]) if r.event]


def test_the_fast_path_is_on_with_this_nats_py(bus: Bus) -> None:
    """The nats-py internals the fast path relies on are there; when an upgrade removes them
    publish_many still works, slower, and this test says why it got slower."""
    assert bus.wire.direct


def test_own_messages_are_cut_out_before_nats_py_parses(bus: Bus) -> None:
    assert bus.wire.cuts


async def test_frames_split_anywhere_reach_the_right_subscriber_in_order(bus: Bus) -> None:
    """The bytes a socket read hands over end anywhere: inside a control line, a payload,
    its CRLF. Fed to the client's parser split at every position (and byte by byte), our
    own messages reach our handler whole and in order, and a message for an ordinary
    nats-py subscription, a PING and a status reply in between reach nats-py as before."""
    nc = bus.nc
    ours: list[tuple[bytes, bytes, bytes | None]] = []
    unsubscribe = await bus.wire.subscribe("_CUT.ours.*", lambda s, d, h: ours.append((s, d, h)))
    theirs: asyncio.Queue[bytes] = asyncio.Queue()

    async def on_theirs(msg: Msg) -> None:
        theirs.put_nowait(msg.data)

    other = await nc.subscribe("_CUT.theirs", cb=on_theirs)
    own_sid = max(bus.wire._handlers)  # the subscription just made
    try:
        stream = b"".join(
            [
                b"MSG _CUT.ours.1 %d 5\r\nfirst\r\n" % own_sid,
                b"MSG _CUT.ours.2 %d _INBOX.x 0\r\n\r\n" % own_sid,
                b"MSG _CUT.theirs %d 6\r\ntheirs\r\n" % other._id,
                b"PING\r\n",
                b"HMSG _CUT.ours.3 %d 16 16\r\nNATS/1.0 503\r\n\r\n\r\n" % own_sid,
                b"MSG _CUT.ours.4 %d 11\r\nwith\r\ncrlf!\r\n" % own_sid,
            ]
        )
        expected = [
            (b"_CUT.ours.1", b"first", None),
            (b"_CUT.ours.2", b"", None),
            (b"_CUT.ours.3", b"", b"NATS/1.0 503\r\n\r\n"),
            (b"_CUT.ours.4", b"with\r\ncrlf!", None),
        ]
        splits = [[stream[:at], stream[at:]] for at in range(1, len(stream))]
        splits.append([stream[at : at + 1] for at in range(len(stream))])
        for pieces in splits:
            ours.clear()
            for piece in pieces:
                await nc._ps.parse(piece)
            assert ours == expected, pieces
            assert await asyncio.wait_for(theirs.get(), 5) == b"theirs"
            assert not nc._ps.buf
    finally:
        await unsubscribe()
        await other.unsubscribe()


async def test_own_frames_do_not_go_through_nats_py_parser(bus: Bus) -> None:
    """The cut is what handles our frames, even split across reads: nats-py's parser,
    which records every MSG it parses in ``msg_arg``, never sees one of them."""
    nc = bus.nc
    ours: list[bytes] = []
    unsubscribe = await bus.wire.subscribe("_CUT.own.*", lambda s, d, h: ours.append(d))
    own_sid = max(bus.wire._handlers)
    try:
        stream = b"".join(b"MSG _CUT.own.%d %d 2\r\nok\r\n" % (i, own_sid) for i in range(100))
        nc._ps.msg_arg.clear()
        for at in range(0, len(stream), 7):
            await nc._ps.parse(stream[at : at + 7])
        assert ours == [b"ok"] * 100
        assert not nc._ps.msg_arg
    finally:
        await unsubscribe()


def test_acks_read_like_a_list_of_acks() -> None:
    acks = Acks([5, 6, 9], frozenset({1}))
    as_list = [Ack(5), Ack(6, True), Ack(9)]
    assert len(acks) == 3 and list(acks) == as_list and acks == as_list
    assert acks[-1] == Ack(9) and acks[1:] == as_list[1:] and acks[::-1] == as_list[::-1]
    assert acks != [Ack(5), Ack(6), Ack(9)] and Acks([]) == [] and Acks([]) != ()
    with pytest.raises(IndexError):
        acks[3]
    with pytest.raises(TypeError):
        hash(acks)


@pytest.mark.parametrize("direct", [True, False], ids=["fast-path", "nats-py-api"])
async def test_acks_are_exact_and_repeats_are_flagged(
    bus: Bus, project: str, direct: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every event gets the sequence it is stored at; events already on the log are acked as
    duplicates with their first sequence; each is stored once, in order."""
    if not direct:
        monkeypatch.setattr(bus, "wire", _public_api_wire(bus))
    events = findings(project, 3000)
    first = await bus.publish_many(events[:1000])
    acks = await bus.publish_many(events, window=256)
    assert acks[:1000] == [(a.seq, True) for a in first]
    assert not any(a.duplicate for a in acks[1000:])
    assert await stored_ids(bus, project) == [e.id for e in events]
    stored = [r.seq async for r in read(bus, subjects=[project_subjects(project)])]
    assert [a.seq for a in acks] == stored


def _public_api_wire(bus: Bus) -> Wire:
    wire = Wire.__new__(Wire)
    wire.nc, wire.direct, wire._handlers, wire._valid = bus.nc, False, {}, set()
    return wire


@pytest_asyncio.fixture(loop_scope="session")
async def own_server(tmp_path: Path) -> AsyncIterator[EmbeddedServer]:
    server = EmbeddedServer(tmp_path / "nats", port=free_port(), auth=None)
    await server.start()
    yield server
    server.stop()


@pytest.mark.slow
async def test_a_restart_in_the_middle_loses_nothing_and_stores_nothing_twice(
    own_server: EmbeddedServer,
) -> None:
    """The server restarts while publish_many is under way: every event is acked, at its
    own sequence, and the log holds each event exactly once."""
    bus = await connect(own_server.url, name="restart-publisher")
    try:
        await ensure_log(bus.js)
        events = findings("rs", 30_000)
        publishing = asyncio.create_task(bus.publish_many(events))
        while (await bus.stream_last_seq()) < 5_000:
            await asyncio.sleep(0.01)
        own_server.stop()
        await own_server.start()
        async with asyncio.timeout(120):
            acks = await publishing
        assert len({a.seq for a in acks}) == len(events)
        ids = await stored_ids(bus, "rs")
        assert sorted(ids) == sorted(e.id for e in events)
        by_seq = {r.seq: r.event.id async for r in read(bus, subjects=["loop.rs.>"]) if r.event}
        assert all(by_seq[a.seq] == e.id for a, e in zip(acks, events, strict=True))
    finally:
        await bus.close()


async def test_a_log_that_is_not_there_is_said_at_once(tmp_path: Path) -> None:
    """publish_many against a server without the log fails with LogNotProvisioned, not
    after the back-off budget."""
    server = EmbeddedServer(tmp_path / "bare", port=free_port(), auth=None)
    await server.start()
    bus = await connect(server.url, name="no-log")
    try:
        with pytest.raises(LogNotProvisioned, match="no loopbus log"):
            async with asyncio.timeout(20):
                await bus.publish_many(findings("nl", 10))
    finally:
        await bus.close()
        server.stop()
