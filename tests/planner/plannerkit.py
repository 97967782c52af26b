"""Stand-ins for the planner and reconnaissance commands, a repository with a ``[plan]``
table, and a charter started on the log (the facts the charter daemons would publish,
published here with the system credential)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from reviewkit import CRITERION, GitRepo, setup_repo

from bus import Bus
from schemas import Actor
from schemas.charter import (
    Charter,
    CharterApproved,
    CharterCriterion,
    RunCriteriaChecked,
)

SYSTEM = Actor(role="system", principal="test-system")

PLANNER_SCRIPT = r"""
import io, json, sys
plans, log = sys.argv[1], sys.argv[2]
raw = sys.stdin.read()
with open(log, "a") as fh:
    fh.write(json.dumps(json.loads(raw)) + "\n")
sys.stdin = io.StringIO(raw)
from loopbus.scripted.planner import main
raise SystemExit(main([plans]))
"""

RECON_SCRIPT = r"""
import json, pathlib, sys
steps, log = sys.argv[1], sys.argv[2]
raw = sys.stdin.read()
path = pathlib.Path(log)
calls = path.read_text().splitlines()
with path.open("a") as fh:
    fh.write(json.dumps(json.loads(raw)) + "\n")
answers = json.loads(pathlib.Path(steps).read_text())
print(json.dumps(answers[min(len(calls), len(answers) - 1)]))
"""


class StandIn:
    """A stand-in command: its script, its data file, and the briefs it was given."""

    def __init__(self, agent_dir: Path, name: str, script: str, data: Any, suffix: str):
        self.dir = agent_dir / name
        self.dir.mkdir()
        self.dir.chmod(0o777)
        self.script = self.dir / "agent.py"
        self.script.write_text(script)
        self.script.chmod(0o644)
        self.data = self.dir / f"data{suffix}"
        self.data.write_text(json.dumps(data))
        self.data.chmod(0o644)
        self.log = self.dir / "calls.jsonl"
        self.log.touch()
        self.log.chmod(0o666)

    @property
    def command(self) -> str:
        return f"{sys.executable} {self.script} {self.data} {self.log}"

    def calls(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()]


def planner(agent_dir: Path, plans: dict[str, Any]) -> StandIn:
    """The scripted planner (``loopbus.scripted.planner``) answering from ``plans``,
    logging each brief."""
    return StandIn(agent_dir, "planner", PLANNER_SCRIPT, plans, ".json")


def recon(agent_dir: Path, answers: list[dict[str, Any]]) -> StandIn:
    """A reconnaissance command printing ``answers`` in turn (the last repeats)."""
    return StandIn(agent_dir, "recon", RECON_SCRIPT, answers, ".json")


def plan_toml(slice_id: str, *units: str, blocked: dict[str, str] | None = None) -> str:
    """A plan of ``units`` (the first claims the repository's pending criterion)."""
    lines = ["[slice]", f'id = "{slice_id}"']
    for i, unit in enumerate(units):
        lines += ["", "[[unit]]", f'id = "{unit}"', f'files = ["src/{unit.lower()}.py"]']
        if i == 0:
            lines.append(f'criteria = ["{CRITERION}"]')
        if blocked and unit in blocked:
            lines.append(f'blocked_by = ["{blocked[unit]}"]')
    return "\n".join(lines) + "\n"


def planned_repo(
    tmp_path: Path, project: str, command: str, recon_command: str | None = None, **plan: Any
) -> GitRepo:
    tables: dict[str, Any] = {"plan": {"command": command, **plan}}
    if recon_command:
        tables["recon"] = {"command": recon_command}
    return setup_repo(tmp_path, project, None, **tables)


async def start_charter(bus: Bus, project: str, trunk: str, autonomy: str = "full") -> str:
    """Approve a charter and check its criteria (failing) on ``trunk``; the run's id."""
    charter = Charter(
        id="C1",
        title="totals",
        criteria=(CharterCriterion(id="total", text="it totals", test=CRITERION),),
        autonomy=autonomy,  # type: ignore[arg-type]
    )
    approved = CharterApproved(project=project, actor=SYSTEM, charter=charter)
    await bus.publish(approved)
    await check_criteria(bus, project, approved.id, trunk)
    return approved.id


async def check_criteria(bus: Bus, project: str, run: str, trunk: str) -> None:
    await bus.publish(
        RunCriteriaChecked(
            project=project, actor=SYSTEM, run=run, charter="C1", trunk=trunk, failing=("total",)
        )
    )


def loopbus(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"LOOPBUS_NATS_URL": url}
    return subprocess.run(
        [sys.executable, "-m", "loopbus.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )
