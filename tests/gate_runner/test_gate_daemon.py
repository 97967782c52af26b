"""The gate-runner daemon (a real subprocess): it answers commits and requests with signed
suites, raises a finding for each refused result, and after SIGKILL answers nothing twice."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from daemon_process import DaemonProcess
from gate_repos import GitRepo, config

from bus import Bus, read
from projections import gates as gates_projection
from schemas import Actor, Event, FindingRaised, UnitTransitioned
from schemas.gates import GateResultRecorded, GateRunRequested, GateSuiteCompleted

WAIT_S = 60.0
OK_CHECK = (
    '\n[[check]]\nid = "ok"\ncommand = "python -c \'pass\'"\nparser = "exit-code"\ntimeout = 30\n'
)


class Daemon(DaemonProcess):
    def __init__(self, repo: Path, url: str, data: Path, log: Path, trunk_poll: float = 0):
        args = [sys.executable, "-m", "workers.gate_runner", "--repo", str(repo)]
        args += ["--nats-url", url, "--data-dir", str(data), "--jobs", "1"]
        super().__init__([*args, "--trunk-poll", str(trunk_poll)], log, stop_wait_s=15)


@pytest.fixture
def daemon(
    git: Callable[[str], GitRepo], nats_url: str, tmp_path: Path, project: str
) -> AsyncIterator[tuple[Daemon, GitRepo]]:
    repo = git("repo")
    repo.commit({"loopbus.toml": config(project, OK_CHECK), "README": "one\n"})
    runner = Daemon(repo.path, nats_url, tmp_path / "data", tmp_path / "daemon.log")
    runner.start()
    yield runner, repo
    runner.stop()


async def wait_for(bus: Bus, project: str, match: Callable[[Event], bool]) -> Event:
    """The first event of ``project`` (from sequence 1, then live) that ``match`` accepts."""
    async with asyncio.timeout(WAIT_S):
        async for record in read(bus, subjects=[f"loop.{project}.>"], follow=True):
            if record.event is not None and match(record.event):
                return record.event
    raise AssertionError("unreachable")


async def all_events(bus: Bus, project: str) -> list[Event]:
    return [r.event async for r in read(bus, subjects=[f"loop.{project}.>"]) if r.event]


def answers(cause: str) -> Callable[[Event], bool]:
    return lambda e: isinstance(e, GateSuiteCompleted) and e.cause == cause


async def test_daemon_answers_requests_commits_and_refusals_once_across_a_kill(
    bus: Bus, daemon: tuple[Daemon, GitRepo], project: str, system: Actor
) -> None:
    """Requests and accepted unit commits get one signed suite each; an unsigned result gets
    one finding; a request made while the daemon was killed is answered after restart."""
    runner, repo = daemon
    request = GateRunRequested(
        project=project, actor=system, commit=repo.head or "", reason="trunk"
    )
    await bus.publish(request)
    suite = await wait_for(bus, project, answers(request.id))
    assert isinstance(suite, GateSuiteCompleted)
    assert suite.outcome == "pass" and suite.reason == "trunk" and suite.commit == repo.head

    unit_commit = repo.change(README="two\n")
    moved = UnitTransitioned(
        project=project,
        actor=system,
        unit="U1",
        state="working",
        prior="working",
        by="commit",
        commit=unit_commit,
    )
    await bus.publish(moved)
    unit_suite = await wait_for(bus, project, answers(moved.id))
    assert isinstance(unit_suite, GateSuiteCompleted)
    assert unit_suite.unit == "U1" and unit_suite.commit == unit_commit
    assert [e.check for e in unit_suite.checks] == ["ok"]

    unsigned = GateResultRecorded(
        project=project,
        actor=system,
        check="ok",
        tree="d" * 40,
        inputs="d" * 40,
        config_sha="e" * 64,
        outcome="pass",
        duration_s=0.1,
        runner="nobody-000000000000",
    )
    await bus.publish(unsigned)
    refusal = await wait_for(
        bus,
        project,
        lambda e: isinstance(e, FindingRaised) and e.evidence.get("refused") == unsigned.id,
    )
    assert isinstance(refusal, FindingRaised) and "unsigned" in refusal.message

    runner.kill()
    missed = GateRunRequested(project=project, actor=system, commit=unit_commit, reason="manual")
    await bus.publish(missed)
    runner.start()
    after = GateRunRequested(project=project, actor=system, commit=repo.head or "", force=True)
    await bus.publish(after)
    await wait_for(bus, project, answers(after.id))

    events = await all_events(bus, project)
    causes = [e.cause for e in events if isinstance(e, GateSuiteCompleted)]
    assert sorted(causes, key=str) == sorted([request.id, moved.id, missed.id, after.id])
    refusals = [e for e in events if isinstance(e, FindingRaised) and e.evidence.get("refused")]
    assert len(refusals) == 1
    state = gates_projection.FOLD.fold(events)
    assert all(gates_projection.is_answered(state, c) for c in causes if c)
    assert gates_projection.unreported_refusals(state) == []


async def test_a_units_newer_commit_supersedes_its_unanswered_older_one(
    bus: Bus,
    git: Callable[[str], GitRepo],
    nats_url: str,
    tmp_path: Path,
    project: str,
    system: Actor,
) -> None:
    """Started over a backlog, the daemon gates only each unit's latest commit."""
    repo = git("repo")
    first = repo.commit({"loopbus.toml": config(project, OK_CHECK), "README": "one\n"})
    second = repo.change(README="two\n")
    old, new = (
        UnitTransitioned(
            project=project,
            actor=system,
            unit="U7",
            state="working",
            prior="working",
            by="commit",
            commit=sha,
        )
        for sha in (first, second)
    )
    await bus.publish(old)
    await bus.publish(new)
    runner = Daemon(repo.path, nats_url, tmp_path / "data", tmp_path / "daemon.log")
    runner.start()
    try:
        await wait_for(bus, project, answers(new.id))
    finally:
        runner.stop()
    suites = [e for e in await all_events(bus, project) if isinstance(e, GateSuiteCompleted)]
    assert [s.cause for s in suites] == [new.id]


async def test_trunk_commits_are_gated_once_each(
    bus: Bus, git: Callable[[str], GitRepo], nats_url: str, tmp_path: Path, project: str
) -> None:
    """Each commit the trunk ref moves to gets one trunk suite, also across a restart."""
    repo = git("repo")
    first = repo.commit({"loopbus.toml": config(project, OK_CHECK), "README": "one\n"})
    watcher = Daemon(repo.path, nats_url, tmp_path / "data", tmp_path / "d.log", trunk_poll=0.2)
    watcher.start()
    try:

        def trunk_suite(commit: str) -> Callable[[Event], bool]:
            return lambda e: (
                isinstance(e, GateSuiteCompleted) and e.commit == commit and e.reason == "trunk"
            )

        await wait_for(bus, project, trunk_suite(first))
        second = repo.change(README="two\n")
        await wait_for(bus, project, trunk_suite(second))
        watcher.kill()
        watcher.start()
        third = repo.change(README="three\n")
        await wait_for(bus, project, trunk_suite(third))
    finally:
        watcher.stop()
    events = await all_events(bus, project)
    requests = [e.commit for e in events if isinstance(e, GateRunRequested)]
    assert requests == [first, second, third]
    suites = [e.commit for e in events if isinstance(e, GateSuiteCompleted)]
    assert suites == [first, second, third]
