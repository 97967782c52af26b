"""Two replicas of one per-project daemon, as real processes on a real server, share the
projects: both get some, no ping is answered twice, and a killed replica's projects move
to the other once their leases lapse.

The daemon is a stand-in (``echo_replica.py``) whose answers carry fresh ids, so an answer
given twice is two events on the log rather than one de-duplicated one.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from daemon_process import DaemonProcess

from bus import Bus, read
from schemas import Actor, Event, FindingRaised, project_subjects
from schemas.leases import LeaseReleased, LeaseRenewed, LeaseTaken
from schemas.targets import RecordTarget

SCRIPT = Path(__file__).with_name("echo_replica.py")
LEASE_S = 3.0
WAIT_S = 90.0
PROJECTS = 12  # two replicas each own some of 12 projects but for a 1 in 2,048 draw
ASKER = Actor(role="system", principal="tests")


class Replica(DaemonProcess):
    def __init__(self, name: str, url: str, home: Path) -> None:
        args = [sys.executable, "-P", str(SCRIPT), "--nats-url", url]
        super().__init__([*args, "--project-lease", str(LEASE_S)], home / f"{name}.log")

    def ready(self) -> bool:
        assert self.process is not None and self.process.poll() is None, self.tail()
        return super().ready()


@pytest.fixture
async def replicas(nats_url: str, tmp_path: Path) -> AsyncIterator[list[Replica]]:
    started = [Replica(name, nats_url, tmp_path) for name in ("a", "b")]
    yield started
    for replica in started:
        replica.stop()


async def events_of(bus: Bus, projects: list[str]) -> list[Event]:
    subjects = [project_subjects(p) for p in projects]
    return [r.event async for r in read(bus, subjects=subjects) if r.event is not None]


def pongs(events: list[Event]) -> list[FindingRaised]:
    return [e for e in events if isinstance(e, FindingRaised) and e.criterion == "pong"]


def answers(events: list[Event]) -> Counter[str]:
    """Ping id -> pongs answering it."""
    return Counter(e.target.id for e in pongs(events) if isinstance(e.target, RecordTarget))


def pid_of(pong: FindingRaised) -> int:
    return int(pong.actor.principal.rsplit(":", 1)[1])  # echo@<host>:<pid>


def current_holders(events: list[Event]) -> dict[str, str | None]:
    """Project -> the holder its last echo project-lease event names (None: released)."""
    out: dict[str, str | None] = {}
    for e in events:
        if isinstance(e, LeaseTaken | LeaseRenewed) and e.work == "project":
            out[e.project] = e.holder
        elif isinstance(e, LeaseReleased) and e.work == "project":
            out[e.project] = None
    return out


async def ping_all(bus: Bus, projects: list[str]) -> set[str]:
    pings = [
        FindingRaised(
            project=p,
            actor=ASKER,
            producer="standards",
            target=RecordTarget(id=p),
            severity="low",
            criterion="ping",
            message="ping",
        )
        for p in projects
    ]
    for ping in pings:
        await bus.publish(ping)
    return {ping.id for ping in pings}


async def until_answered(bus: Bus, projects: list[str], pings: set[str]) -> list[Event]:
    async with asyncio.timeout(WAIT_S):
        while True:
            events = await events_of(bus, projects)
            if pings <= set(answers(events)):
                return events
            await asyncio.sleep(0.2)


async def test_replicas_share_projects_answer_once_and_take_over_a_killed_ones(
    bus: Bus, project: str, replicas: list[Replica]
) -> None:
    """Both replicas hold projects, every ping is answered once, after one is killed the
    other takes its projects (naming it as lapsed) and answers all of them, and a clean
    stop releases every project it holds."""
    projects = [f"{project}p{n}" for n in range(PROJECTS)]
    a, b = replicas
    for replica in replicas:
        replica.start()
    async with asyncio.timeout(WAIT_S):
        while not all(r.ready() for r in replicas):
            await asyncio.sleep(0.1)
    first = await until_answered(bus, projects, await ping_all(bus, projects))
    assert max(answers(first).values()) == 1

    # Once both are members the projects are split between them (rendezvous hashing).
    async with asyncio.timeout(WAIT_S):
        while True:
            held = current_holders(await events_of(bus, projects))
            owners = {h.split(":")[1] for h in held.values() if h is not None}
            if len(held) == PROJECTS and None not in held.values() and len(owners) == 2:
                break
            await asyncio.sleep(0.2)
    second = await ping_all(bus, projects)
    events = await until_answered(bus, projects, second)
    by = {
        pid_of(p)
        for p in pongs(events)
        if isinstance(p.target, RecordTarget) and p.target.id in second
    }
    assert by == {a.pid, b.pid}, (a.tail(), b.tail())

    a.kill()
    third = await ping_all(bus, projects)
    events = await until_answered(bus, projects, third)
    late = [p for p in pongs(events) if isinstance(p.target, RecordTarget) and p.target.id in third]
    assert {pid_of(p) for p in late} == {b.pid}
    lapsed = {e.lapsed for e in events if isinstance(e, LeaseTaken) and e.lapsed is not None}
    assert lapsed and all(f":{a.pid}:" in h for h in lapsed), lapsed
    counts = answers(events)
    assert set(counts.values()) == {1}, {k: n for k, n in counts.items() if n > 1}
    assert len(counts) == 3 * PROJECTS

    # A clean stop hands every project on at once: released, not left to lapse.
    b.stop()
    held = current_holders(await events_of(bus, projects))
    assert set(held) == set(projects) and set(held.values()) == {None}, held
