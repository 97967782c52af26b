"""A stand-in verify command and a repository configured for it.

The stand-in logs the brief it read, runs its own acceptance check (a command from its
data file) in its working directory — trunk's checkout — and prints an envelope: a
finding when the check fails, the scores from its data file, and the check it ran.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
from kernelkit import running
from slice_helpers import BUILDER, SYSTEM, make_repo

from bus import Bus, read
from projections.ship import ShipRules
from schemas import Actor, Event, Outcome, UnitTransitioned, new_id, project_subjects
from schemas.reports import CommitReport
from schemas.reviews import ReviewFinding, ReviewVerdict, VerdictAccepted
from schemas.scores import AxisScore
from schemas.targets import PlanTarget
from workers.agents import config as agent_config
from workers.agents.verify_config import parse_verify_text
from workers.dispatcher.daemon import Dispatcher
from workers.dispatcher.repo import ProjectRepo
from workers.gates.signing import Signer
from workers.kernel import Kernel
from workers.verifier.daemon import Verifier

REVIEWER = Actor(role="reviewer", principal="r1")

VERIFIER_SCRIPT = r"""
import json, subprocess, sys
data, log = sys.argv[1], sys.argv[2]
brief = sys.stdin.read()
with open(log, "a") as fh:
    fh.write(brief.strip() + "\n")
spec = json.load(open(data))
run = subprocess.run(spec["check"], shell=True, capture_output=True, text=True)
passed = run.returncode == 0
findings = [] if passed else [{
    "message": "acceptance check failed on trunk: "
    + (run.stderr.strip().splitlines() or ["?"])[-1],
    "check": "acceptance",
}]
print(json.dumps({
    "findings": findings,
    "scores": spec.get("scores", []),
    "unreached": spec.get("unreached", []),
    "checks": [{"id": "acceptance", "command": spec["check"], "passed": passed}],
}))
"""

FULL_MARKS = [
    {"axis": a, "score": 10}
    for a in ("correctness", "testing_strategy", "plan_adherence", "regression_surface")
]


class StandInVerifier:
    def __init__(self, agent_dir: Path, check: str, **data: Any) -> None:
        self.dir = agent_dir / "verifier"
        self.dir.mkdir()
        self.dir.chmod(0o777)
        self.script = self.dir / "verify.py"
        self.script.write_text(VERIFIER_SCRIPT)
        self.script.chmod(0o644)
        self.data = self.dir / "data.json"
        self.data.write_text(json.dumps({"check": check, **data}))
        self.data.chmod(0o644)
        self.log = self.dir / "briefs.jsonl"
        self.log.touch()
        self.log.chmod(0o666)

    @property
    def command(self) -> str:
        return f"{sys.executable} {self.script} {self.data} {self.log}"

    def briefs(self) -> list[str]:
        """Each brief exactly as the command read it on stdin."""
        return self.log.read_text().splitlines()


def verify_repo(path: Path, project: str, verifier: StandInVerifier, extra: str = "") -> str:
    """A repository whose ``loopbus.toml`` has a boot check, ``[verify]`` and ``[agents]``
    letting the stand-in write its log; returns the first commit."""
    toml = (
        f'[project]\nid = "{project}"\n\n'
        f'[[check]]\nid = "boot"\ncommand = "{sys.executable} -c \'print(1)\'"\n\n'
        f'[verify]\ncommand = "{verifier.command}"\ntimeout = 60\n\n'
        f'[agents]\nwritable = ["{verifier.dir.parent}"]\n' + extra
    )
    return make_repo(path, {"loopbus.toml": toml, "README.md": "increment\n"})


@asynccontextmanager
async def loop(
    bus: Bus, project: str, path: Path, signer: Signer, **rules: Any
) -> AsyncIterator[Kernel]:
    """The dispatcher and the verifier for ``project``, following the log."""
    text = (path / "loopbus.toml").read_text()
    configs = {project: agent_config.parse(text, repo=str(path))}
    dispatcher = Dispatcher(
        bus,
        repos={project: ProjectRepo(path)},
        signer=signer,
        projects=[project],
        ship={project: ShipRules(**({"verify": True} | rules))},
    )
    verifier = Verifier(configs, {project: parse_verify_text(text)})
    async with running(bus, dispatcher) as d, running(bus, verifier):
        yield d


async def until(
    bus: Bus, project: str, done: Callable[[list[Event]], bool], timeout: float = 60
) -> tuple[list[Event], int]:
    """The project's log up to the first record after which ``done`` holds, and its seq."""
    events: list[Event] = []

    async def scan() -> int:
        async for record in read(bus, subjects=[project_subjects(project)], follow=True):
            if record.event is not None:
                events.append(record.event)
                if done(events):
                    return record.seq
        raise AssertionError("the log ended")

    seq = await asyncio.wait_for(scan(), timeout)
    return events, seq


def finished(project: str, unit_id: str, sha: str) -> list[Event]:
    """What a builder, a reviewer and the merger leave on the log for a merged unit."""
    verdict = ReviewVerdict(
        project=project,
        actor=REVIEWER,
        unit=unit_id,
        request=new_id(),
        head=sha,
        verdict="approve",
        scores=[msgspec.convert(s, AxisScore) for s in FULL_MARKS],
        summary=f"REVIEW-MARK looks fine for {unit_id}",
        findings=[
            ReviewFinding(target=PlanTarget(slice="S1"), severity="low", message="REVIEW-MARK nit")
        ],
    )
    accepted = VerdictAccepted(
        project=project, actor=SYSTEM, unit=unit_id, verdict=verdict.id,
        request=verdict.request, reviewer="r1", decision="approve", claimed="approve",
        round=1, head=sha, cause=verdict.id,
    )  # fmt: skip
    return [
        CommitReport(project=project, actor=BUILDER, unit=unit_id, sha=sha),
        verdict,
        accepted,
        UnitTransitioned(
            project=project,
            actor=SYSTEM,
            unit=unit_id,
            state="done",
            outcome=Outcome(summary=f"BUILDER-SUMMARY-MARK {unit_id} merged", ended_by="merged"),
            by="merged",
            commit=sha,
        ),
    ]


def green_trunk(signer: Signer, project: str, path: Path, commit: str) -> list[Event]:
    """What the merger's trunk gates leave for a green ``commit``: the runner's key, a
    signed passing result and suite on it."""
    from dulwich.repo import Repo
    from slice_helpers import gate_result, gate_suite, registration

    with Repo(str(path)) as repo:
        tree = repo[commit.encode()].tree.decode()  # type: ignore[attr-defined]
    result = gate_result(signer, project, commit=commit, tree=tree)
    suite = gate_suite(signer, project, None, commit=commit, tree=tree, results=[result])
    return [registration(project, signer), result, suite]
