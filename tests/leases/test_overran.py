"""A gate runner that is alive but stuck (its suite never ends, its lease renewed) gives
the ask up at the lease's deadline, and the other replica answers it, once."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

from gate_repos import GitRepo, config
from kernelkit import running
from logkit import of, wait_log
from replicas import commits, doubled, sleeping_check

from bus import Bus
from schemas import Actor, Event
from schemas.gates import GateRunRequested, GateSuiteCompleted
from schemas.leases import LeaseReleased, LeaseRenewed, LeaseTaken
from workers.gate_runner.daemon import GateRunnerDaemon
from workers.gate_runner.deadline import suite_deadline
from workers.gates.runner import GateRunner, SuiteResult
from workers.gates.signing import load_or_create
from workers.leases.deadlines import MARGIN_S

ASKER = Actor(role="system", principal="tests")


class StuckRunner(GateRunner):
    """A runner whose every suite waits for ever (the hang seen in the benchmark)."""

    async def evaluate(self, commit: str | None = None, **how: Any) -> SuiteResult:
        await asyncio.Event().wait()
        raise AssertionError("never reached")


def daemon(runner: GateRunner, project: str, deadline_s: float) -> GateRunnerDaemon:
    made = GateRunnerDaemon(runner, project, jobs=1, trunk=None, lease_ttl_s=3)
    assert made.lease is not None
    made.lease = dataclasses.replace(made.lease, deadlines={project: deadline_s})
    return made


def done_by(events: list[Event], item: str) -> list[str]:
    return [e.holder for e in of(LeaseReleased, events, item=item) if e.how == "done"]


async def test_a_stuck_holder_gives_the_ask_up_and_the_other_answers_it(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    repo = GitRepo(tmp_path / "repo")
    [sha] = commits(repo, project, 1, seconds=0.1)
    stuck = daemon(StuckRunner(bus, repo.path, load_or_create(tmp_path / "a", "a")), project, 4)
    well = daemon(GateRunner(bus, repo.path, load_or_create(tmp_path / "b", "b")), project, 60)
    assert stuck.lease is not None and well.lease is not None
    ask = GateRunRequested(project=project, actor=ASKER, commit=sha)
    async with running(bus, stuck):
        await bus.publish(ask)
        # The stuck replica alone takes the ask first, and renews it while it hangs.
        await wait_log(bus, project, lambda es: bool(of(LeaseRenewed, es, item=ask.id)), 30)
        async with running(bus, well):
            events = await wait_log(bus, project, lambda es: bool(done_by(es, ask.id)), 60)
    assert done_by(events, ask.id) == [well.lease.holder]
    [gave_up] = [e for e in of(LeaseReleased, events, item=ask.id) if e.how == "overran"]
    assert gave_up.holder == stuck.lease.holder
    takings = of(LeaseTaken, events, item=ask.id)
    assert [t.holder for t in takings] == [stuck.lease.holder, well.lease.holder]
    assert takings[0].deadline_s == 4
    # No renewal by the stuck holder claims time past its deadline.
    first = takings[0]
    renewals = of(LeaseRenewed, events, item=ask.id, holder=stuck.lease.holder)
    assert renewals and all(r.deadline is not None and r.at <= r.deadline for r in renewals)
    assert all((r.at - first.at).total_seconds() <= 4 for r in renewals)
    assert [e.cause for e in of(GateSuiteCompleted, events)] == [ask.id]
    assert doubled(events) == {}


async def test_a_gate_runner_takes_each_ask_with_trunks_suite_deadline(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    repo = GitRepo(tmp_path / "repo")
    commits(repo, project, 1, seconds=0.1)
    runner = GateRunner(bus, repo.path, load_or_create(tmp_path / "a", "a"))
    made = GateRunnerDaemon(runner, project, jobs=1, trunk="HEAD", lease_ttl_s=10)
    async with running(bus, made):
        events = await wait_log(bus, project, lambda es: bool(of(LeaseTaken, es)), 30)
    text = config(project, sleeping_check(0.1))  # what commits() wrote at trunk
    assert {t.deadline_s for t in of(LeaseTaken, events)} == {suite_deadline(text)}
    assert suite_deadline(text) == 2 * 120 + MARGIN_S  # replicas.sleeping_check's timeout
