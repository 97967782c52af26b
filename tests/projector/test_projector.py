"""The projector against a real server: quarantine, replay equals the view, crash safety."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loopbus.bus import (
    Bus,
    EmbeddedServer,
    Record,
    TransitionConflict,
    Views,
    connect,
    ensure_log,
    free_port,
    read,
)
from loopbus.bus.views import encode_view, view_key
from loopbus.projections import FOLDS, Fold, fold_events
from loopbus.schemas import Event, MessageQuarantined, project_subjects
from loopbus.workers.errors import FoldFailed
from loopbus.workers.projector.daemon import Projector, ProjectorDaemon

from .conftest import event_sequences, finding, planned, transition


async def expected_view(bus: Bus, project: str) -> dict[str, bytes]:
    """What a full replay from sequence 1 gives, encoded the way the projector stores it."""
    records = [r async for r in read(bus, subjects=[project_subjects(project)])]
    events = [r.event for r in records if r.event is not None]
    last = {}
    for fold in FOLDS:
        seqs = [r.seq for r in records if r.event is not None]
        last[fold.name] = seqs[-1] if seqs else 0
    states = fold_events(events).get(project)
    assert states is not None
    return {fold.name: encode_view(fold, last[fold.name], states[fold.name]) for fold in FOLDS}


async def materialised(views: Views, project: str) -> dict[str, bytes]:
    found = {}
    for fold in FOLDS:
        entry = await views.bucket.get(view_key(project, fold))
        found[fold.name] = entry.value if entry is not None else b""
    return found


async def apply(bus: Bus, projector: Projector, record: Record) -> None:
    """What the projector daemon does with one record: fold it, or quarantine it (the
    kernel carries the quarantine out as a publish conditional on an empty subject)."""
    if record.event is not None:
        projector.apply(record)
        return
    for intent in ProjectorDaemon(bus).undecodable(record):
        with contextlib.suppress(TransitionConflict):  # quarantined before a restart
            await bus.publish_transition(intent.event, intent.expected)  # type: ignore[union-attr]


async def run_projector(
    bus: Bus, kv: Views, project: str, cuts: dict[int, str] | set[int]
) -> Projector:
    """Fold this project's records with interruptions at the given record indexes:

    * ``flush``: write states and checkpoint and carry on;
    * ``crash``: the process dies, losing what it had not flushed, and restarts from KV;
    * ``torn``: it dies between writing the states and writing the checkpoint.
    """
    plan = dict.fromkeys(cuts, "flush") if isinstance(cuts, set) else dict(cuts)
    records = [r async for r in read(bus, subjects=[project_subjects(project)])]
    projector = await reopen(bus, kv)
    index = 0
    while index < len(records):
        record = records[index]
        await apply(bus, projector, record)
        mode = plan.pop(index, None)
        if mode == "flush":
            await projector.flush(record.seq)
        elif mode in ("crash", "torn"):
            if mode == "torn":
                before = projector.checkpoint
                await projector.flush(record.seq)
                await kv.set_checkpoint(before)
            projector = await reopen(bus, kv)
            index = next(
                (i for i, r in enumerate(records) if r.seq > projector.checkpoint), len(records)
            )
            continue
        index += 1
    await projector.flush(records[-1].seq)
    return projector


async def reopen(bus: Bus, kv: Views) -> Projector:
    """A fresh projector on ``kv``, resuming from the checkpoint and views stored there."""
    return await Projector.open(kv)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_replay_equals_materialised_view(
    bus: Bus, private_kv: Callable[[], Any], data: st.DataObject
) -> None:
    """For random histories with random flushes, crashes and torn writes (states written,
    checkpoint not) at random points, the view equals a replay from sequence 1."""
    project = f"hyp{os.getpid()}x{data.draw(st.integers(0, 10**12))}"
    events: list[Event] = data.draw(event_sequences(project))
    cuts = data.draw(
        st.dictionaries(
            st.integers(0, len(events) - 1),
            st.sampled_from(["flush", "crash", "torn"]),
            max_size=6,
        )
    )
    await bus.publish_many(events)
    kv = await private_kv()
    await run_projector(bus, kv, project, cuts)
    assert await materialised(kv, project) == await expected_view(bus, project)


async def test_restart_from_checkpoint_does_not_double_apply(
    bus: Bus, project: str, private_kv: Callable[[], Any]
) -> None:
    """A projector restarted from its checkpoint, re-reading events it already folded into
    some states, ends in exactly the replay state (no event counted twice)."""
    await bus.publish_many([planned(project, "U1"), finding(project, "U1", 1, "high")])
    kv = await private_kv()
    first = Projector(views=kv)
    records = [r async for r in read(bus, subjects=[project_subjects(project)])]
    for record in records:
        first.apply(record)
    await first.flush(0)  # states written, checkpoint not advanced: a crash right here
    await bus.publish(finding(project, "U1", 1, "high"))  # same key again: times becomes 2
    second = await Projector.open(kv)
    assert second.checkpoint == 0
    async for record in read(bus, subjects=[project_subjects(project)]):
        second.apply(record)
    await second.flush(records[-1].seq + 1)
    assert await materialised(kv, project) == await expected_view(bus, project)


async def test_malformed_message_is_quarantined_and_neighbours_applied(
    bus: Bus, project: str, private_kv: Callable[[], Any]
) -> None:
    """A message that does not decode lands in quarantine with its reason and bytes, is
    reported as a finding, and every valid message around it is applied."""
    await bus.publish(planned(project, "U1"))
    bad = await bus.js.publish(f"loop.{project}.unit.U1", b'{"kind":"unit.planned.v1","unit":7}')
    await bus.publish(transition(project, "U1", "working"))
    kv = await private_kv()
    await run_projector(bus, kv, project, set())
    # Running it again (a restart) must not quarantine the same message twice.
    await run_projector(bus, kv, project, set())
    records = [r async for r in read(bus, subjects=[f"loop.{project}.quarantine.>"])]
    assert len(records) == 1
    quarantined = records[0].event
    assert isinstance(quarantined, MessageQuarantined)
    assert quarantined.original_seq == bad.seq
    assert quarantined.original_subject == f"loop.{project}.unit.U1"
    assert "unit" in quarantined.reason
    assert quarantined.excerpt == b'{"kind":"unit.planned.v1","unit":7}'
    await run_projector(bus, kv, project, set())
    view = await materialised(kv, project)
    units = FOLDS[0].decode(view["units"].split(b'"state":', 1)[1][:-1])
    assert units.units["U1"].state == "working"
    findings = FOLDS[1].decode(view["findings"].split(b'"state":', 1)[1][:-1])
    classes = [f.cls for scope in findings.open.values() for f in scope.values()]
    assert classes == ["quarantined"]


@pytest.mark.slow
async def test_projector_killed_mid_stream_converges_to_replay(tmp_path: Path) -> None:
    """SIGKILL the projector daemon while it folds, restart it: it resumes from its checkpoint
    and its view of the project is byte-for-byte the replay state."""
    # A server of its own: on the shared one the projector would fold every other test's
    # history too, and "mid-stream" would depend on what ran before.
    server = EmbeddedServer(tmp_path / "nats", port=free_port(), auth=None)
    await server.start()
    bus = await connect(server.url, name="projector-kill-test")
    try:
        await ensure_log(bus.js)
        await _kill_and_restart(bus, server.url)
    finally:
        await bus.close()
        server.stop()


async def _kill_and_restart(bus: Bus, nats_url: str) -> None:
    project = f"kill{os.getpid()}"
    events: list[Event] = [planned(project, u) for u in ("U1", "U2", "U3")]
    for i in range(60_000):
        unit = ("U1", "U2", "U3")[i % 3]
        events.append(
            finding(project, unit, i % 50 + 1, "high")
            if i % 2
            else transition(project, unit, "working")
        )
    await bus.publish_many(events)
    last = await bus.stream_last_seq()
    kv = await Views.open(bus)
    command = [
        sys.executable,
        "-m",
        "loopbus.workers.projector",
        "--nats-url",
        nats_url,
        "--flush-every",
        "500",
        "--log-level",
        "warning",
    ]
    first = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    try:
        await wait_for(lambda: checkpoint(kv), lambda cp: cp > 0, timeout=60)
        # A random moment after the first flush: sometimes mid-fold, sometimes between
        # writing the states and writing the checkpoint.
        await asyncio.sleep(random.uniform(0, 0.05))
        first.send_signal(signal.SIGKILL)
    finally:
        first.wait(timeout=10)
    assert await checkpoint(kv) < last, "killed before it finished: the restart is exercised"
    second = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    try:
        await wait_for(lambda: checkpoint(kv), lambda cp: cp >= last, timeout=120)
    finally:
        second.terminate()
        second.wait(timeout=10)
    assert await materialised(kv, project) == await expected_view(bus, project)


async def checkpoint(kv: Views) -> int:
    return await kv.checkpoint()


async def wait_for(probe: Callable[[], Any], done: Callable[[Any], bool], timeout: float) -> Any:
    """Poll ``probe`` until ``done`` holds, failing after ``timeout`` seconds."""
    async with asyncio.timeout(timeout):
        while True:
            value = await probe()
            if done(value):
                return value
            await asyncio.sleep(0.02)


async def test_a_view_that_no_longer_decodes_is_rebuilt_from_the_log(
    bus: Bus, project: str, private_kv: Callable[[], Any]
) -> None:
    """A stored view whose shape is out of date is rebuilt from sequence 1 and ends equal
    to a replay, instead of being trusted or crashing the projector."""
    await bus.publish_many([planned(project, "U1"), finding(project, "U1", 3, "high")])
    kv = await private_kv()
    await run_projector(bus, kv, project, set())
    await kv.bucket.put(view_key(project, FOLDS[1]), b'{"seq":1,"state":{"open":"not a map"}}')
    await bus.publish(transition(project, "U1", "working"))
    projector = await Projector.open(kv)
    assert projector.rebuild and projector.resume_from == 1
    assert await kv.checkpoint() == 0  # persisted before folding again: a crash resumes it
    async for record in read(bus, subjects=[project_subjects(project)]):
        projector.apply(record)
    await projector.flush(await bus.stream_last_seq())
    assert await materialised(kv, project) == await expected_view(bus, project)


async def test_a_fold_that_fails_stops_the_projector_before_its_checkpoint(
    bus: Bus, project: str, private_kv: Callable[[], Any]
) -> None:
    """A fold raising on a good event stops the projector with the checkpoint before that
    event: the event is retried after a restart, never silently skipped."""

    def explode(state: Any, event: Any) -> Any:
        if getattr(event, "unit", None) == "BOOM":
            raise RuntimeError("fold defect")
        return state

    fragile = Fold(name="fragile", state_type=dict, initial=dict, apply=explode)
    await bus.publish_many([planned(project, "U1"), planned(project, "BOOM")])
    kv = await private_kv()
    projector = Projector(views=kv, folds=(fragile,))
    with pytest.raises(FoldFailed, match="fold defect"):
        async for record in read(bus, subjects=[project_subjects(project)]):
            projector.apply(record)
            await projector.flush(record.seq)
    first = (await read_first(bus, project)).seq
    assert projector.checkpoint == first


async def read_first(bus: Bus, project: str) -> Any:
    async for record in read(bus, subjects=[project_subjects(project)]):
        return record
