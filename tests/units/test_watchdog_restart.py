"""The watchdog process killed with SIGKILL mid-sweep and restarted: no unit LOST twice,
none missed."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections import Counter

import pytest
from unitkit import answered, claim, log_events, plan, transitions, units_daemon, wait_log

from bus import HEARTBEAT_BUCKET, Bus
from projections.transitions import audit
from schemas import Event, UnitTransitioned
from schemas.reports import HeartbeatReport, encode_heartbeat, heartbeat_key

LAPSE_S = 1.0
SILENT = [f"A{i:02d}" for i in range(20)]  # never heartbeat: lapse while the first watchdog runs
ALIVE = [f"B{i:02d}" for i in range(10)]  # heartbeat until the kill: lapse while none runs


async def spawn_watchdog(url: str, project: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "workers.watchdog",
        "--nats-url",
        url,
        "--heartbeat-lapse",
        f"{LAPSE_S:g}s",
        "--project",
        project,
        "--log-level",
        "warning",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )


def lost(events: list[Event]) -> list[UnitTransitioned]:
    return [t for t in transitions(events) if t.state == "lost"]


@pytest.mark.slow
async def test_sigkill_and_restart_neither_loses_a_unit_twice_nor_misses_one(
    bus: Bus, nats_url: str, project: str
) -> None:
    """Watchdog killed -9 mid-sweep and restarted: every unit LOST once, none missed."""
    units = SILENT + ALIVE
    await plan(bus, project, {"S1": units})
    async with units_daemon(nats_url, project):
        reports = [claim(project, unit, "started") for unit in units]
        for report in reports:
            await bus.publish(report)
        await wait_log(bus, project, lambda evs: all(answered(r)(evs) for r in reports))
    kv = await bus.bucket(HEARTBEAT_BUCKET)
    stop_beating = asyncio.Event()

    async def beat() -> None:  # the live builders of ALIVE, until their runner "dies"
        while not stop_beating.is_set():
            for unit in ALIVE:
                beat = HeartbeatReport(project=project, unit=unit, actor=reports[0].actor)
                await kv.put(heartbeat_key(project, unit), encode_heartbeat(beat))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop_beating.wait(), LAPSE_S / 5)

    beater = asyncio.create_task(beat())
    first = await spawn_watchdog(nats_url, project)
    try:
        await wait_log(bus, project, lambda evs: len(lost(evs)) >= 1, timeout=30)
        first.send_signal(signal.SIGKILL)
        await first.wait()
    finally:
        stop_beating.set()
        await beater
    assert first.returncode == -signal.SIGKILL
    at_kill = lost(await log_events(bus, project))
    assert {t.unit for t in at_kill} <= set(SILENT)
    # No watchdog runs while the ALIVE units' last heartbeats age past the lapse.
    await asyncio.sleep(LAPSE_S + 0.2)
    second = await spawn_watchdog(nats_url, project)
    try:
        events = await wait_log(
            bus, project, lambda evs: {t.unit for t in lost(evs)} == set(units), timeout=30
        )
    finally:
        second.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(second.communicate(), 30)
    assert second.returncode == 0, err.decode()
    events = await log_events(bus, project)
    counts = Counter(t.unit for t in lost(events))
    assert counts == Counter({unit: 1 for unit in units})
    assert audit(events) == []
    for transition in lost(events):
        assert transition.outcome is not None
        assert transition.outcome.lapse_s == LAPSE_S
        expect_beat = transition.unit in ALIVE
        assert (transition.outcome.last_heartbeat is not None) == expect_beat
