"""No single message stops anything: the projector, units, standards, watchdog, dispatcher
and integrity daemons run on their kernels against a real server while generated malformed
messages — valid events with a field mutated, nesting past the bound, strings past the
bound, naive times, wrong types, unknown kinds, events filed under another project's
subject, messages over 1 MB, bytes that are not JSON — are interleaved with valid events
of several projects."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernelkit import running
from viewkit import expected_view, materialised

from bus import Bus, EmbeddedServer, Views, connect, ensure_log, free_port, read
from projections import fold_events
from schemas import (
    Event,
    FoldQuarantined,
    MessageQuarantined,
    encode_event,
    subject_of,
)
from schemas.limits import MAX_DEPTH, MAX_EVENT_BYTES, MAX_TEXT_CHARS
from schemas.quarantine import is_quarantine_subject
from workers.dispatcher.daemon import Dispatcher
from workers.integrity.daemon import Integrity
from workers.kernel import Daemon, Kernel
from workers.projector.daemon import ProjectorDaemon
from workers.standards.daemon import Standards
from workers.units.daemon import Units
from workers.watchdog.daemon import Watchdog

from .histories import histories

MUTATIONS = (
    "wrong-type",
    "deep",
    "huge-string",
    "naive-time",
    "unknown-kind",
    "foreign-project",
    "over-1mb",
    "not-json",
)


@pytest_asyncio.fixture(loop_scope="session")
async def big_server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """A server of its own that takes messages up to 2 MB (as a misconfigured cluster
    might), so that messages over loopbus's 1 MB bound reach the log."""
    server = EmbeddedServer(
        tmp_path_factory.mktemp("fuzz"),
        port=free_port(),
        extra_config="max_payload: 2MB\n",
        auth=None,  # what is fuzzed is decoding; tests/integrity covers who may publish
    )
    await server.start()
    yield server.url
    server.stop()


def poisoned(draw: st.DrawFn, event: Event, other: str) -> tuple[str, bytes]:
    """(subject, bytes) of a malformed message derived from a valid ``event``."""
    how = draw(st.sampled_from(MUTATIONS))
    doc: dict[str, Any] = msgspec.to_builtins(event)
    subject = subject_of(event)
    if how == "wrong-type":
        name = draw(st.sampled_from(sorted(doc)))
        doc[name] = 7 if isinstance(doc[name], dict) else {"not": "this"}
    elif how == "deep":
        depth = draw(st.integers(MAX_DEPTH + 1, 5_000))
        return subject, encode_event(event)[:-1] + b',"extra":' + b"[" * depth + b"]" * depth + b"}"
    elif how == "huge-string":  # in a field the event keeps (unknown fields are ignored)
        doc["actor"]["principal"] = "x" * draw(st.integers(MAX_TEXT_CHARS + 1, 3 * MAX_TEXT_CHARS))
    elif how == "naive-time":
        doc["at"] = "2026-11-30T10:00:00"
    elif how == "unknown-kind":
        doc["kind"] = draw(st.sampled_from(["made.up.v9", "finding.raised.v7", ""]))
    elif how == "foreign-project":  # ``other`` is never the event's own project
        return subject.replace(f"loop.{event.project}.", f"loop.{other}.", 1), encode_event(event)
    elif how == "over-1mb":
        doc["extra"] = ["y" * 60_000] * (MAX_EVENT_BYTES // 60_000 + 2)
    else:
        raw = encode_event(event)
        return subject, raw[: draw(st.integers(0, len(raw) - 1))]
    return subject, msgspec.json.encode(doc)


@st.composite
def traffic(draw: st.DrawFn, projects: list[str]) -> list[tuple[str, Event | tuple[str, bytes]]]:
    """Valid histories of every project, interleaved, with malformed messages among them."""
    streams = [draw(histories(p, max_size=12)) for p in projects]
    mixed: list[tuple[str, Event | tuple[str, bytes]]] = []
    while any(streams):
        stream = draw(st.sampled_from([s for s in streams if s]))
        event = stream.pop(0)
        mixed.append(("valid", event))
        if draw(st.integers(0, 3)) == 0:
            other = draw(st.sampled_from([p for p in projects if p != event.project]))
            mixed.append(("bad", poisoned(draw, event, other)))
    return mixed


class Daemons:
    """The daemons of one example, each on its own kernel: the projector (every project)
    and units, standards, watchdog, dispatcher and integrity (the example's projects)."""

    def __init__(self, bus: Bus, projects: list[str]) -> None:
        self.bus = bus
        self.projector = ProjectorDaemon(bus)
        self.others: list[Daemon] = [
            Units(projects=projects),
            Standards(projects=projects),
            Watchdog(bus, projects=projects),
            Dispatcher(bus, projects=projects),
            Integrity(projects=projects),
        ]

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[list[Kernel]]:
        """Every daemon following the log; the projector's kernel first."""
        async with contextlib.AsyncExitStack() as stack:
            kernels = [
                await stack.enter_async_context(running(self.bus, d))
                for d in (self.projector, *self.others)
            ]
            yield kernels

    async def settled(self, kernels: list[Kernel]) -> int:
        """Wait until every daemon has folded everything on the log, including what they
        published themselves (answers, quarantine records), and the views are written."""
        while True:
            last = await self.bus.stream_last_seq()
            for kernel in kernels:
                await kernel.wait_settled(last)
            while self.projector.checkpoint < last:
                await asyncio.sleep(0.01)
            if await self.bus.stream_last_seq() == last:
                return last


def unsettled(kernels: list[Kernel], last: int) -> str:
    """Which daemons did not settle on ``last``, and where each stands."""
    return "; ".join(
        f"{k.daemon.name}: folded {k.folded}, acted {k.acted_seq}, settled {k.settled.seq}, "
        f"dirty {sorted(k.dirty)}, running {sorted(k.running)}, results {len(k.results)}, "
        f"barrier {k.barrier}"
        for k in kernels
        if k.settled.seq < last
    )


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_no_message_stops_a_daemon_and_views_equal_replay(
    big_server: str, data: st.DataObject
) -> None:
    """Interleaved valid and malformed messages in three projects, six daemons running: none
    stops, each malformed message is quarantined exactly once (a broken quarantine record
    only logged), no fold fails on a valid event, and every view — the projector's in KV,
    each daemon's states in memory — equals a replay of the log."""
    bus = await connect(big_server, name="fuzz")
    try:
        await ensure_log(bus.js)
        await run_example(bus, data)
    finally:
        await bus.close()


_examples = iter(range(10**6))


async def run_example(bus: Bus, data: st.DataObject) -> None:
    tag = f"f{os.getpid()}x{next(_examples)}"
    projects = [f"{tag}a", f"{tag}b", f"{tag}c"]
    mixed = data.draw(traffic(projects))
    daemons = Daemons(bus, projects)
    async with daemons.running() as kernels:
        bad: dict[int, str] = {}
        for kind, item in mixed:
            if kind == "valid":
                assert isinstance(item, Event)
                await bus.publish(item)
            else:
                subject, payload = item  # type: ignore[misc]
                bad[(await bus.js.publish(subject, payload)).seq] = subject
        try:
            async with asyncio.timeout(60):  # a daemon that stopped would never settle
                await daemons.settled(kernels)
        except TimeoutError:
            raise AssertionError(unsettled(kernels, await bus.stream_last_seq())) from None
        assert not [k.daemon.name for k in kernels if k.failed or k.skipped]
        records = [r async for r in read(bus, subjects=[f"loop.{p}.>" for p in projects])]
        quarantined = collections.Counter(  # histories hold made-up quarantines too
            r.event.original_seq
            for r in records
            if isinstance(r.event, MessageQuarantined) and r.event.actor == daemons.projector.actor
        )
        # A broken quarantine record is only logged: quarantining it would chain records.
        due = [seq for seq, subject in bad.items() if not is_quarantine_subject(subject)]
        assert quarantined == collections.Counter(due), "each malformed one quarantined once"
        assert not [r for r in records if isinstance(r.event, FoldQuarantined)]
        kv = await Views.open(bus)
        for project in projects:
            events = [r.event for r in records if r.event and r.event.project == project]
            if not events:
                continue
            assert await materialised(kv, project) == await expected_view(bus, project)
            replayed = fold_events(events)[project]
            for kernel in kernels[1:]:
                for fold in kernel.daemon.folds:
                    live = kernel.project_states(project)[fold.name]
                    assert fold.encode(live) == fold.encode(replayed[fold.name]), (
                        f"{kernel.daemon.name}'s {fold.name} differs from a replay of {project}"
                    )
    for kernel in kernels:  # stopped by the test, not by a message: no crash, no restart
        assert kernel.reached_end.is_set()
