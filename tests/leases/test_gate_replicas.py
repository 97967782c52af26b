"""Two gate-runner processes on one project split its asks, each run once; a runner killed
mid-ask loses its lease when it lapses and the other runs the ask, once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from gate_repos import GitRepo
from logkit import of, wait_log
from replicas import Runner, answered, commits, doubled, holders, runners_used

from bus import Bus
from schemas import Actor
from schemas.gates import GateResultRecorded, GateRunRequested, GateSuiteCompleted
from schemas.leases import LeaseReleased, LeaseTaken

WAIT_S = 120.0
ASKER = Actor(role="system", principal="tests")


@pytest.fixture
def git(tmp_path: Path) -> Callable[[str], GitRepo]:
    return lambda name="repo": GitRepo(tmp_path / name)


@pytest.fixture
async def replicas(tmp_path: Path) -> AsyncIterator[list[Runner]]:
    started: list[Runner] = []
    yield started
    for runner in started:
        runner.stop()


async def start(runners: list[Runner]) -> None:
    for runner in runners:
        runner.start()
    async with asyncio.timeout(WAIT_S):
        while not all(r.ready() for r in runners):
            for runner in runners:
                assert runner.process is not None and runner.process.poll() is None, runner.tail()
            await asyncio.sleep(0.1)


async def ask(bus: Bus, project: str, shas: list[str]) -> set[str]:
    asks = [GateRunRequested(project=project, actor=ASKER, commit=sha) for sha in shas]
    for request in asks:
        await bus.publish(request)
    return {a.id for a in asks}


async def test_two_runners_split_the_asks_and_run_each_once(
    bus: Bus,
    nats_url: str,
    project: str,
    git: Callable[[str], GitRepo],
    tmp_path: Path,
    replicas: list[Runner],
) -> None:
    repo = git("repo")
    shas = commits(repo, project, 4, seconds=2)
    replicas += [Runner(f"r{n}", repo.path, nats_url, tmp_path) for n in (1, 2)]
    await start(replicas)
    asks = await ask(bus, project, shas)
    events = await wait_log(bus, project, lambda es: answered(es, asks), WAIT_S)
    # Each runner holds one ask at a time (--jobs 1) for two seconds or more: the other
    # takes the next ask meanwhile.
    assert doubled(events) == {}
    assert len(runners_used(events)) == 2, runners_used(events)
    assert sum(runners_used(events).values()) == 4
    assert len(holders(events)) == 2
    released = of(LeaseReleased, events, work="gate")
    assert {e.item for e in released} == asks and {e.how for e in released} == {"done"}


async def test_a_killed_runners_ask_is_finished_by_the_other_once(
    bus: Bus,
    nats_url: str,
    project: str,
    git: Callable[[str], GitRepo],
    tmp_path: Path,
    replicas: list[Runner],
) -> None:
    repo = git("repo")
    [sha] = commits(repo, project, 1, seconds=8)
    replicas += [Runner(f"r{n}", repo.path, nats_url, tmp_path, lease_ttl=2) for n in (1, 2)]
    await start(replicas)
    [cause] = await ask(bus, project, [sha])
    events = await wait_log(bus, project, lambda es: bool(of(LeaseTaken, es, work="gate")), WAIT_S)
    [first] = of(LeaseTaken, events, work="gate")
    victim = next(r for r in replicas if f":{r.pid}:" in first.holder)
    victim.kill()  # mid-check: the check sleeps 8 s
    events = await wait_log(bus, project, lambda es: answered(es, {cause}), WAIT_S)
    takeovers = [e for e in of(LeaseTaken, events, work="gate") if e.lapsed is not None]
    assert [e.lapsed for e in takeovers] == [first.holder]
    assert takeovers[0].holder != first.holder
    [suite] = of(GateSuiteCompleted, events, cause=cause)
    survivor = next(r for r in replicas if r is not victim)
    assert suite.runner.startswith(f"{survivor.name}-") and suite.outcome == "pass"
    assert [e.runner for e in of(GateResultRecorded, events)] == [suite.runner]
    assert doubled(events) == {}


async def test_a_check_running_on_one_runner_is_awaited_by_the_other(
    bus: Bus,
    nats_url: str,
    project: str,
    git: Callable[[str], GitRepo],
    tmp_path: Path,
    replicas: list[Runner],
) -> None:
    """Two asks for one tree, one on each runner: the check runs once, and the second
    runner's suite takes the first's result (the check's lease was held meanwhile)."""
    repo = git("repo")
    [sha] = commits(repo, project, 1, seconds=4)
    replicas += [Runner(f"r{n}", repo.path, nats_url, tmp_path) for n in (1, 2)]
    await start(replicas)
    asks = await ask(bus, project, [sha, sha])
    events = await wait_log(bus, project, lambda es: answered(es, asks), WAIT_S)
    gate_holders = {e.holder for e in of(LeaseTaken, events) if e.work == "gate"}
    assert len(gate_holders) == 2  # each runner took one ask (--jobs 1, a 4 s check)
    [result] = of(GateResultRecorded, events)
    assert [e.work for e in of(LeaseTaken, events) if e.work == "check"] == ["check"]
    suites = of(GateSuiteCompleted, events)
    assert sorted(s.checks[0].cached for s in suites) == [False, True]
    assert {s.checks[0].result for s in suites} == {result.id}
