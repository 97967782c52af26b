"""A hostile agent tries to keep another's unit alive, against a real ``loopbus up``.

It holds only the agent credential that ``up`` hands out and a plain NATS client, and beats
for a unit whose builder has gone silent. The server refuses every beat (only the system
writes heartbeats: the builder daemon beats for the agent it runs), the unit still goes
LOST at the lapse, and the attempt is one finding naming the credential however often it
beat. A unit whose holder keeps beating (as the builder daemon does, with the system
credential) stays alive beside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
from integrity.test_hostile_agent import running_up

from bus import HEARTBEAT_BUCKET, Bus, connect_once, read
from bus.creds import default_file, load_credential
from schemas import Actor, Event, FindingRaised, UnitPlanned, UnitTransitioned
from schemas.reports import HeartbeatReport, StartedReport, encode_heartbeat
from schemas.reports import heartbeat_key as key_of

pytestmark = pytest.mark.slow

LOOPBUS = [sys.executable, "-m", "loopbus.cli"]
P = "beats"
LAPSE = "4s"
WAIT_S = 60.0
HOLDER = Actor(role="builder", principal="b1")
ALIVE_HOLDER = Actor(role="builder", principal="b2")
BEAT_SUBJECT = f"$KV.{HEARTBEAT_BUCKET}.{key_of(P, 'U1')}"


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A running ``loopbus up`` with a short lapse: (its NATS URL, its data directory)."""
    data_dir = tmp_path_factory.mktemp("beats") / "data"
    with running_up(data_dir, "--heartbeat-lapse", LAPSE) as started:
        yield started.url, data_dir


async def as_role(up: tuple[str, Path], role: Any) -> Bus:
    url, data_dir = up
    return await connect_once(url, creds=load_credential(default_file(data_dir, role)))


async def events_until(
    up: tuple[str, Path], project: str, done: Callable[[list[Event]], bool]
) -> list[Event]:
    """Read ``project``'s log as the reader until ``done`` holds (bounded)."""
    bus = await as_role(up, "reader")
    try:
        async with asyncio.timeout(WAIT_S):
            while True:
                events = [
                    r.event async for r in read(bus, subjects=[f"loop.{project}.>"]) if r.event
                ]
                if done(events):
                    return events
                await asyncio.sleep(0.2)
    finally:
        await bus.close()


def state_of(events: list[Event], unit: str) -> str | None:
    moved = [e for e in events if isinstance(e, UnitTransitioned) and e.unit == unit]
    return moved[-1].state if moved else None


def refusals_of(events: list[Event], subject: str) -> list[FindingRaised]:
    return [
        e
        for e in events
        if isinstance(e, FindingRaised) and e.evidence.get("refused_publish") == subject
    ]


async def ignore(_exc: Exception) -> None:
    pass


async def beat_forever(beat: Callable[[], Any], beats: list[int]) -> None:
    while True:
        await beat()
        beats.append(1)
        await asyncio.sleep(0.25)


async def test_an_agent_cannot_keep_anothers_unit_alive(up: tuple[str, Path]) -> None:
    """The agent beats for U1, whose builder b1 is silent: every beat is refused, U1 is LOST
    at the lapse, and one finding names the agent credential. U2, whose holder b2 beats
    through the system credential as the builder daemon does, is still working."""
    system = await as_role(up, "system")
    me = Actor(role="system", principal="tests")
    for unit in ("U1", "U2"):
        await system.publish(UnitPlanned(project=P, actor=me, unit=unit, slice="S"))
    # The builder daemon publishes its builders' claims with the system credential.
    for unit, holder in (("U1", HOLDER), ("U2", ALIVE_HOLDER)):
        await system.publish(StartedReport(project=P, actor=holder, unit=unit))
    await events_until(up, P, lambda ev: state_of(ev, "U1") == state_of(ev, "U2") == "working")

    agent = await nats.connect(
        up[0],
        nkeys_seed_str=load_credential(default_file(up[1], "agent")).seed,
        max_reconnect_attempts=0,
        error_cb=ignore,  # each refusal is reported here; the test reads the log instead
    )
    kv = await agent.jetstream(timeout=0.5).key_value(HEARTBEAT_BUCKET)
    forged = encode_heartbeat(HeartbeatReport(project=P, unit="U1", actor=HOLDER))
    itself = Actor(role="builder", principal="agent")
    own = encode_heartbeat(HeartbeatReport(project=P, unit="U1", actor=itself))
    stored: list[int] = []

    async def hostile_beat() -> None:
        for value in (forged, own):  # as U1's holder, and as itself
            # The server drops a refused publish unanswered: the put times out.
            with contextlib.suppress(nats.errors.TimeoutError):
                stored.append(await kv.put(key_of(P, "U1"), value))

    beats = await system.bucket(HEARTBEAT_BUCKET)

    async def holder_beat() -> None:
        beat = HeartbeatReport(project=P, unit="U2", actor=ALIVE_HOLDER)
        await beats.put(key_of(P, "U2"), encode_heartbeat(beat))

    hostile_beats: list[int] = []
    tasks = [
        asyncio.create_task(beat_forever(hostile_beat, hostile_beats)),
        asyncio.create_task(beat_forever(holder_beat, [])),
    ]
    try:
        events = await events_until(up, P, lambda ev: state_of(ev, "U1") == "lost")
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    assert stored == [], "the server stored none of the agent's beats"
    assert len(hostile_beats) >= 2
    assert state_of(events, "U2") == "working"
    [lost] = [e for e in events if isinstance(e, UnitTransitioned) and e.state == "lost"]
    assert lost.outcome is not None and lost.outcome.last_heartbeat is None

    # A marker refusal after the last beat: once it is named, every beat before it was read.
    marker = f"$KV.loopbus_projections.marker-{os.getpid()}"
    await agent.publish(marker, b"0")
    await agent.flush()
    await agent.close()
    named = await events_until(up, "_bus", lambda ev: bool(refusals_of(ev, marker)))
    [finding] = refusals_of(named, BEAT_SUBJECT)
    assert finding.evidence["credential"] == "agent:agent" and finding.actor.role == "system"
    await system.close()


async def test_the_cli_refuses_an_agents_heartbeat_in_one_line(up: tuple[str, Path]) -> None:
    """``loopbus report heartbeat`` with the agent credential stops before anything is sent."""
    system = await as_role(up, "system")
    try:
        me = Actor(role="system", principal="tests")
        await system.publish(UnitPlanned(project=P, actor=me, unit="U9", slice="S"))
    finally:
        await system.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPBUS_")}
    env["LOOPBUS_CREDS"] = str(default_file(up[1], "agent"))
    argv = ["report", "heartbeat", "--project", P, "--unit", "U9", "--nats-url", up[0]]
    done = await asyncio.to_thread(
        subprocess.run,
        [*LOOPBUS, *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    subject = f"$KV.{HEARTBEAT_BUCKET}.{key_of(P, 'U9')}"
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"agent credential may not publish on {subject}" in done.stderr
    assert done.stderr.count("\n") == 1
