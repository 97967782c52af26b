"""The projector against a real server: quarantine, replay equals the view, crash safety."""

from __future__ import annotations

import asyncio
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
from viewkit import apply, expected_view, materialised

from bus import Bus, EmbeddedServer, Views, connect, ensure_log, free_port, read
from bus.views import CHECKPOINT_KEY, Checkpoint
from projections import Fold
from projections import findings as findings_fold
from projections import units as units_fold
from schemas import Event, MessageQuarantined, project_subjects
from workers.projector.core import Projector

from .conftest import event_sequences, finding, planned, transition


async def run_projector(
    bus: Bus, kv: Views, project: str, cuts: dict[int, str] | set[int]
) -> Projector:
    """Fold this project's records with interruptions at the given record indexes:

    * ``flush``: write what changed and the checkpoint, and carry on;
    * ``crash``: the process dies, losing what it had not flushed, and restarts from KV;
    * ``torn``: it dies between writing the values and writing the checkpoint.
    """
    plan = dict.fromkeys(cuts, "flush") if isinstance(cuts, set) else dict(cuts)
    records = [r async for r in read(bus, subjects=[project_subjects(project)])]
    projector = await Projector.open(kv)
    index = 0
    while index < len(records):
        record = records[index]
        await apply(bus, projector, record)
        mode = plan.pop(index, None)
        if mode == "flush":
            await projector.flush(record.seq)
        elif mode in ("crash", "torn"):
            if mode == "torn":
                before = await kv.checkpoint()
                await projector.flush(record.seq)
                await kv.bucket.put(CHECKPOINT_KEY, msgspec_encode(before))
            projector = await Projector.open(kv)
            index = next(
                (i for i, r in enumerate(records) if r.seq >= projector.resume_from), len(records)
            )
            continue
        index += 1
    await projector.flush(records[-1].seq)
    return projector


def msgspec_encode(checkpoint: Checkpoint) -> bytes:
    import msgspec

    return msgspec.json.encode(checkpoint)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_replay_equals_materialised_view(
    bus: Bus, private_kv: Callable[[], Any], data: st.DataObject
) -> None:
    """For random histories with random flushes, crashes and torn writes (values written,
    checkpoint not) at random points, every value in KV equals the same value of a replay
    from sequence 1, and nothing else is there."""
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
    """A projector restarted after a flush whose checkpoint never landed re-reads events it
    had already written values for, and ends in exactly the replay state (no event counted
    twice: ``times`` stays right)."""
    await bus.publish_many([planned(project, "U1"), finding(project, "U1", 1, "high")])
    kv = await private_kv()
    first = await Projector.open(kv)
    records = [r async for r in read(bus, subjects=[project_subjects(project)])]
    for record in records:
        first.apply(record)
    flush, writes = first.capture()
    await kv.write(flush, records[-1].seq, writes)
    await kv.bucket.put(CHECKPOINT_KEY, msgspec_encode(Checkpoint()))  # as if it never landed
    await bus.publish(finding(project, "U1", 1, "high"))  # same key again: times becomes 2
    second = await Projector.open(kv)
    assert second.resume_from == 1
    async for record in read(bus, subjects=[project_subjects(project)]):
        second.apply(record)
    await second.flush(await bus.stream_last_seq())
    assert await materialised(kv, project) == await expected_view(bus, project)
    state, _ = await kv.read(project, findings_fold.FOLD) or (None, None)
    assert [f.times for f in findings_fold.open_findings(state)] == [2]


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
    units, _ = await kv.read(project, units_fold.FOLD) or (None, None)
    assert units.units["U1"].state == "working"
    findings, _ = await kv.read(project, findings_fold.FOLD) or (None, None)
    assert [f.cls for f in findings_fold.open_findings(findings)] == ["quarantined"]


@pytest.mark.slow
async def test_projector_killed_mid_stream_converges_to_replay(tmp_path: Path) -> None:
    """SIGKILL the projector daemon while it folds, restart it: it resumes from its checkpoint
    and every value of its view of the project is byte for byte the replay's."""
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
        "workers.projector",
        "--nats-url",
        nats_url,
        "--interval",
        "0.01",
        "--log-level",
        "warning",
    ]
    first = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    try:
        await wait_for(lambda: checkpoint(kv), lambda cp: cp > 0, timeout=60)
        # A random moment after the first flush: sometimes mid-fold, sometimes between
        # writing the values and writing the checkpoint.
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
    return (await kv.checkpoint()).seq


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
    """A stored value whose shape is out of date makes its view fold again from sequence 1
    (the stale values deleted), ending equal to a replay, instead of being trusted or
    crashing the projector."""
    await bus.publish_many([planned(project, "U1"), finding(project, "U1", 3, "high")])
    kv = await private_kv()
    projector = await run_projector(bus, kv, project, set())
    await kv.bucket.put(f"view.{project}.findings.open.junk", b'{"f":1,"k":["junk"],"v":7}')
    await kv.bucket.put(f"view.{project}.findings", b'{"f":1,"seq":2,"n":{},"v":{"resolved":"x"}}')
    await bus.publish(transition(project, "U1", "working"))
    projector = await Projector.open(kv)
    assert projector.rebuild and projector.resume_from == 1
    async for record in read(bus, subjects=[project_subjects(project)]):
        projector.apply(record)
    await projector.flush(await bus.stream_last_seq())
    assert await materialised(kv, project) == await expected_view(bus, project)


async def test_a_fold_that_fails_skips_the_event_for_that_fold_and_carries_on(
    bus: Bus, project: str, private_kv: Callable[[], Any]
) -> None:
    """A fold raising on a good event skips it for that fold alone (it used to stop the
    projector): the next events are folded, the other folds take the event, and the
    checkpoint moves past it; the failure is returned for the kernel to record."""

    def explode(state: Any, event: Any) -> Any:
        if getattr(event, "unit", None) == "BOOM":
            raise RuntimeError("fold defect")
        state.units[event.unit] = state.units.get(event.unit) or units_fold.UnitView(
            unit=event.unit, slice="S1"
        )
        return state

    fragile = Fold(
        name="fragile", state_type=units_fold.UnitsState, initial=units_fold.initial, apply=explode
    )
    await bus.publish_many(
        [planned(project, "U1"), planned(project, "BOOM"), planned(project, "U2")]
    )
    kv = await private_kv()
    projector = await Projector.open(kv, folds=(fragile, units_fold.FOLD))
    failed = []
    async for record in read(bus, subjects=[project_subjects(project)]):
        failed += [(record.seq, f.fold, str(f.error)) for f in projector.apply(record)]
        await projector.flush(record.seq)
    boom = (await read_first(bus, project)).seq + 1
    assert failed == [(boom, "fragile", "fold defect")]
    assert sorted(projector.views[(project, "fragile")].state.units) == ["U1", "U2"]
    assert sorted(projector.views[(project, "units")].state.units) == ["BOOM", "U1", "U2"]
    assert projector.checkpoint.seq == boom + 1


async def read_first(bus: Bus, project: str) -> Any:
    async for record in read(bus, subjects=[project_subjects(project)]):
        return record
