"""Two builder processes on one project split the rounds its units owe: each round built
once, by the builder whose lease on it won, and both builders used."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from builderkit import ScriptedBuilder, dispatch, running, setup
from logkit import of, wait_log

from bus import Bus, connect
from schemas import Event, UnitTransitioned
from schemas.leases import LeaseReleased, LeaseTaken
from schemas.reports import CommitReport
from workers.units.daemon import Units

WAIT_S = 180.0
UNITS = ("U1", "U2", "U3", "U4")
IMPLEMENTED = {"src/app.py": "def total(xs):\n    return sum(xs)\n"}


def builder_process(
    name: str, repo: Path, url: str, home: Path, lease_ttl: float = 30
) -> subprocess.Popen[bytes]:
    log = open(home / f"{name}.log", "ab")  # noqa: SIM115 - the process writes it until stopped
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "workers.builder",
            "--repo",
            str(repo),
            "--nats-url",
            url,
            "--data-dir",
            str(home / name),
            "--jobs",
            "1",
            "--lease-ttl",
            str(lease_ttl),
        ],
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


@pytest.fixture
def agent(tmp_path: Path) -> ScriptedBuilder:
    """The scripted builder, slowed to two seconds a round: a builder holds one round at
    a time (``--jobs 1``), so the other takes the next meanwhile."""
    scripted = ScriptedBuilder(tmp_path / "agent")
    scripted.script.write_text("import time\ntime.sleep(2)\n" + scripted.script.read_text())
    scripted.plan([{"write": IMPLEMENTED, "stdout": {"status": "completed", "summary": "sum"}}])
    return scripted


async def test_two_builders_split_the_rounds_and_build_each_once(
    bus: Bus, nats_url: str, project: str, tmp_path: Path, agent: ScriptedBuilder
) -> None:
    repo, base = setup(tmp_path, project, agent.command)
    units_bus = await connect(nats_url, name="units-under-test")
    builders = [builder_process(n, repo.path, nats_url, tmp_path) for n in ("b1", "b2")]
    try:
        async with running(units_bus, Units(projects=[project])):
            for unit in UNITS:
                await dispatch(bus, project, unit, base)

            def built(events: list[Event]) -> bool:
                committed = {e.unit for e in of(UnitTransitioned, events, by="commit")}
                released = {e.item for e in of(LeaseReleased, events)}
                taken = {e.item for e in of(LeaseTaken, events)}
                return committed >= set(UNITS) and bool(taken) and taken <= released

            events = await wait_log(bus, project, built, WAIT_S)
    finally:
        for process in builders:
            process.terminate()
        for process in builders:
            await asyncio.to_thread(process.wait, 30)
        await units_bus.close()
    rounds = Counter(call["brief"]["unit"] for call in agent.calls())
    assert rounds == Counter(dict.fromkeys(UNITS, 1)), rounds
    taken = of(LeaseTaken, events)
    assert len(taken) == len(UNITS) and all(e.work == "build" for e in taken)
    assert len({e.holder for e in taken}) == 2, [e.holder for e in taken]
    assert {e.how for e in of(LeaseReleased, events)} == {"done"}


async def test_a_killed_builders_round_is_built_by_the_other_once(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """SIGKILL the builder holding a round mid-command: its lease lapses, the other
    builder takes the round over and commits it; the unit gets one commit."""
    slow = ScriptedBuilder(tmp_path / "agent")
    slow.script.write_text("import time\ntime.sleep(6)\n" + slow.script.read_text())
    slow.plan([{"write": IMPLEMENTED, "stdout": {"status": "completed", "summary": "sum"}}])
    repo, base = setup(tmp_path, project, slow.command)
    units_bus = await connect(nats_url, name="units-under-test")
    builders = {
        n: builder_process(n, repo.path, nats_url, tmp_path, lease_ttl=2) for n in ("b1", "b2")
    }
    try:
        async with running(units_bus, Units(projects=[project])):
            await dispatch(bus, project, "U1", base)
            events = await wait_log(
                bus, project, lambda es: bool(of(LeaseTaken, es, work="build")), WAIT_S
            )
            [first] = of(LeaseTaken, events, work="build")
            [victim] = [p for p in builders.values() if f":{p.pid}:" in first.holder]
            os.killpg(victim.pid, signal.SIGKILL)  # the builder and the command it runs
            await asyncio.to_thread(victim.wait, 30)

            def committed(events: list[Event]) -> bool:
                return bool(of(UnitTransitioned, events, unit="U1", by="commit"))

            events = await wait_log(bus, project, committed, WAIT_S)
    finally:
        for process in builders.values():
            if process.poll() is None:
                process.terminate()
                await asyncio.to_thread(process.wait, 30)
        await units_bus.close()
    takeovers = [e for e in of(LeaseTaken, events, work="build") if e.lapsed is not None]
    assert [e.lapsed for e in takeovers] == [first.holder]
    assert takeovers[0].holder != first.holder
    assert len(of(CommitReport, events, unit="U1")) == 1
