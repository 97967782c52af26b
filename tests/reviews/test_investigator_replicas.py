"""Two investigator daemons on one project split its investigations through leases: each
investigation is run once, by the replica whose taking won, and released after its
answer is on the log."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from reviewkit import Scripted, config_of, of, running, setup_repo, wait_log
from test_investigator import REPORT, trunk_red

from bus import Bus
from schemas.leases import LeaseReleased, LeaseTaken
from schemas.reviews import InvestigationCompleted
from workers.investigator.daemon import Investigator

INTERFACES = ("api-a", "api-b", "api-c")


async def test_two_investigators_run_each_investigation_once(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    agent = Scripted(agent_dir, name="investigator")
    agent.plan([REPORT])
    repo = setup_repo(tmp_path, project, None, investigator={"command": agent.command})
    replicas = [Investigator(config_of(repo), lease_ttl_s=30, jobs=1) for _ in range(2)]
    async with running(bus, replicas[0]), running(bus, replicas[1]):
        for name in INTERFACES:
            await bus.publish(trunk_red(project, name))
            await bus.publish(trunk_red(project, name, again=True))

        def done(events: list) -> bool:
            released = of(LeaseReleased, events, work="investigation")
            return len(of(InvestigationCompleted, events)) >= 3 and len(released) >= 3

        events = await wait_log(bus, project, done, 120)
    calls = Counter(call["doc"]["trigger"] for call in agent.calls())
    assert calls == Counter({f"trunk-red:{name}": 1 for name in INTERFACES})
    taken = of(LeaseTaken, events, work="investigation")
    assert len(taken) == 3
    assert {e.holder for e in taken} <= {r.lease.holder for r in replicas if r.lease}
    released = of(LeaseReleased, events, work="investigation")
    assert sorted(e.item for e in released) == sorted(e.item for e in taken)
    assert len(of(InvestigationCompleted, events)) == 3
