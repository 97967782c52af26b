"""``[agents] sandbox = "none"`` is said on the log: one standing finding per project,
raised by the daemons that run agents while the configuration says so, resolved after."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelkit import running
from logkit import of, wait_log

from bus import Bus, connect
from schemas import FindingRaised, FindingResolved
from workers.agents import unsandboxed
from workers.agents.config import RepoConfig, parse
from workers.investigator.daemon import Investigator
from workers.reviewer.daemon import Reviewer


def configs(project: str, tmp_path: Path, sandbox: str) -> dict[str, RepoConfig]:
    text = (
        f'[project]\nid = "{project}"\n\n[review]\ncommand = "true"\nroster = ["r1"]\n\n'
        f'[investigator]\ncommand = "true"\n\n[agents]\nsandbox = "{sandbox}"\n'
    )
    return {project: parse(text, repo=str(tmp_path))}


def resolves(events: list[Any], finding: str) -> bool:
    return any(e.finding == finding for e in of(FindingResolved, events))


def standing(events: list[Any]) -> list[FindingRaised]:
    return [e for e in of(FindingRaised, events) if e.criterion == unsandboxed.CRITERION]


async def test_one_standing_finding_while_agents_run_unsandboxed(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """Two daemons that run agents raise it once between them; started again on the same
    configuration they raise nothing more; on ``sandbox = "on"`` it is resolved."""
    none = configs(project, tmp_path, "none")
    for _round in range(2):
        first = await connect(nats_url, name="reviewer-under-test")
        second = await connect(nats_url, name="investigator-under-test")
        try:
            async with (
                running(first, Reviewer(none)) as reviewer,
                running(second, Investigator(none)) as investigator,
            ):
                events = await wait_log(bus, project, lambda es: bool(standing(es)))
                last = (await bus.stream_info()).state.last_seq
                await reviewer.wait_settled(last)
                await investigator.wait_settled(last)
        finally:
            await first.close()
            await second.close()
    events = await wait_log(bus, project, lambda es: bool(standing(es)))
    [finding] = standing(events)
    assert finding.severity == "high" and finding.owner == "operator"
    assert 'sandbox = "none"' in finding.message and finding.producer == "standards"
    again = await connect(nats_url, name="investigator-on")
    try:
        async with running(again, Investigator(configs(project, tmp_path, "on"))):
            events = await wait_log(
                bus,
                project,
                lambda es: any(e.finding == finding.id for e in of(FindingResolved, es)),
            )
    finally:
        await again.close()
    assert len(standing(events)) == 1
