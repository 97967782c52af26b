"""Checks that run unfenced are visible on the log: a gate-runner daemon on a host where the
agent sandbox cannot be made (here: a ``PATH`` without bubblewrap, as on a machine where it
is not installed) still answers its asks, and keeps one standing ``checks-unfenced``
finding open for the operator; a daemon that can fence checks again resolves it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from gate_repos import GitRepo, config
from test_gate_daemon import OK_CHECK, all_events, answers, wait_for

from bus import Bus
from loopbus.render import render_findings
from projections import findings as findings_fold
from schemas import Actor, FindingRaised, FindingResolved
from schemas.gates import GateRunRequested, GateSuiteCompleted
from workers.gates.fenced import FencedExecutor
from workers.gates.unfenced import CRITERION


def start(repo: Path, url: str, data: Path, log: Path, path: str) -> subprocess.Popen[bytes]:
    """The gate-runner daemon as ``up`` runs it, with ``path`` as its ``PATH``."""
    args = [
        sys.executable, "-m", "workers.gate_runner", "--repo", str(repo),
        "--nats-url", url, "--data-dir", str(data), "--jobs", "1", "--trunk-poll", "0",
    ]  # fmt: skip
    with open(log, "ab") as sink:
        return subprocess.Popen(args, stdout=sink, stderr=sink, env={**os.environ, "PATH": path})


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture
def no_bwrap(tmp_path: Path) -> str:
    """A ``PATH`` with an interpreter and a shell but no bubblewrap."""
    folder = tmp_path / "bin-without-bwrap"
    folder.mkdir()
    for name in ("python", "python3"):
        (folder / name).symlink_to(sys.executable)
    for name in ("sh", "true"):
        found = shutil.which(name)
        if found is not None:
            (folder / name).symlink_to(found)
    return str(folder)


@pytest.fixture
def repo(git: Callable[[str], GitRepo], project: str) -> GitRepo:
    made = git("repo")
    made.commit({"loopbus.toml": config(project, OK_CHECK), "README": "one\n"})
    return made


@pytest.fixture
def running(
    repo: GitRepo, nats_url: str, tmp_path: Path
) -> Iterator[Callable[[str], subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []

    def run(path: str) -> subprocess.Popen[bytes]:
        process = start(repo.path, nats_url, tmp_path / "data", tmp_path / "daemon.log", path)
        started.append(process)
        return process

    yield run
    for process in started:
        if process.poll() is None:
            stop(process)


def standing(events: list[object]) -> list[FindingRaised]:
    return [e for e in events if isinstance(e, FindingRaised) and e.criterion == CRITERION]


async def test_unfenced_checks_raise_one_standing_finding_and_still_run(
    bus: Bus,
    repo: GitRepo,
    running: Callable[[str], subprocess.Popen[bytes]],
    no_bwrap: str,
    project: str,
    system: Actor,
) -> None:
    """Without bubblewrap the daemon runs the check as a plain subprocess (the suite is
    answered) and raises one high finding for the operator naming why; a second daemon
    on the same machine adds no second one; `status` lists it."""
    for _attempt in range(2):
        daemon = running(no_bwrap)
        request = GateRunRequested(project=project, actor=system, commit=repo.head or "")
        await bus.publish(request)
        suite = await wait_for(bus, project, answers(request.id))
        assert isinstance(suite, GateSuiteCompleted) and suite.outcome == "pass"
        found = await wait_for(
            bus, project, lambda e: isinstance(e, FindingRaised) and e.criterion == CRITERION
        )
        stop(daemon)
    [finding] = standing(await all_events(bus, project))
    assert found == finding
    assert (finding.severity, finding.owner, finding.cls) == ("high", "operator", "meta")
    assert finding.actor.role == "system" and finding.unit is None
    assert "bubblewrap" in finding.evidence["fence"]
    assert "checks run unfenced" in finding.message and "signing key" in finding.message
    page = "\n".join(render_findings(findings_fold.FOLD.fold(await all_events(bus, project))))
    assert f"[{CRITERION}]" in page and "checks run unfenced" in page


async def test_a_daemon_that_fences_checks_again_resolves_the_finding(
    bus: Bus,
    repo: GitRepo,
    running: Callable[[str], subprocess.Popen[bytes]],
    no_bwrap: str,
    project: str,
) -> None:
    """Once bubblewrap is back (the daemon's own ``PATH``), the next daemon resolves the
    standing finding and raises none."""
    problem = await FencedExecutor().available()
    if problem is not None:
        pytest.skip(f"the agent sandbox cannot fence checks on this machine: {problem}")
    unfenced = running(no_bwrap)
    raised = await wait_for(
        bus, project, lambda e: isinstance(e, FindingRaised) and e.criterion == CRITERION
    )
    stop(unfenced)
    running(os.environ["PATH"])
    resolved = await wait_for(
        bus, project, lambda e: isinstance(e, FindingResolved) and e.finding == raised.id
    )
    assert isinstance(resolved, FindingResolved) and "fenced again" in resolved.why
    state = findings_fold.FOLD.fold(await all_events(bus, project))
    assert [f for f in findings_fold.open_findings(state) if f.criterion == CRITERION] == []
