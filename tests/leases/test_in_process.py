"""Two gate-runner daemons in one process (each its own kernel and lease holder) split
the asks of one project: every ask is leased once, run once and released."""

from __future__ import annotations

from pathlib import Path

from gate_repos import GitRepo
from kernelkit import running
from logkit import of, wait_log
from replicas import answered, commits, doubled

from bus import Bus
from schemas import Actor
from schemas.gates import GateRunRequested
from schemas.leases import LeaseReleased, LeaseTaken
from workers.gate_runner.daemon import GateRunnerDaemon
from workers.gates.runner import GateRunner
from workers.gates.signing import load_or_create

ASKER = Actor(role="system", principal="tests")


async def test_two_daemons_lease_each_ask_once(bus: Bus, project: str, tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    shas = commits(repo, project, 4, seconds=0.5)
    daemons = [
        GateRunnerDaemon(
            GateRunner(bus, repo.path, load_or_create(tmp_path / n, n), project=project),
            project,
            jobs=1,
            trunk=None,
            lease_ttl_s=10,
        )
        for n in ("a", "b")
    ]
    async with running(bus, daemons[0]), running(bus, daemons[1]):
        asks = [GateRunRequested(project=project, actor=ASKER, commit=sha) for sha in shas]
        for request in asks:
            await bus.publish(request)
        events = await wait_log(bus, project, lambda es: answered(es, {a.id for a in asks}), 60)
    assert doubled(events) == {}
    taken = of(LeaseTaken, events)
    assert sorted(e.item for e in taken) == sorted(a.id for a in asks)
    assert {e.holder for e in taken} <= {d.lease.holder for d in daemons if d.lease}
    assert sorted(e.item for e in of(LeaseReleased, events)) == sorted(a.id for a in asks)
