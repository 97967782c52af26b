"""Helpers for the builder tests: a real repository, a scripted builder command, a unit
planned and dispatched on the log, and bounded waits on the log."""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from bus import Bus, connect
from schemas import Actor, UnitPlanned
from schemas.slices import UnitDispatched
from workers.agents.config import RepoConfig, parse
from workers.builder.daemon import Builder
from workers.kernel import Kernel
from workers.units.daemon import Units

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reviews"))

from kernelkit import running
from logkit import of, wait_log  # noqa: F401 - re-exported for the tests
from reviewkit import GitRepo

SYSTEM = Actor(role="system", principal="tests")

BUILDER_SCRIPT = r"""
import json, os, sys
from pathlib import Path
plan_path, log_path = sys.argv[1], sys.argv[2]
brief = json.load(sys.stdin)
calls = Path(log_path).read_text().splitlines() if Path(log_path).exists() else []
with open(log_path, "a") as log:
    log.write(json.dumps({"brief": brief, "env": dict(os.environ), "cwd": os.getcwd()}) + "\n")
steps = json.loads(Path(plan_path).read_text())
step = steps[min(len(calls), len(steps) - 1)]
for name, text in step.get("write", {}).items():
    Path(name).parent.mkdir(parents=True, exist_ok=True)
    Path(name).write_text(text)
for name in step.get("delete", []):
    Path(name).unlink()
out = step.get("stdout", {"status": "completed", "summary": "done"})
sys.stdout.write(out if isinstance(out, str) else json.dumps(out))
sys.exit(step.get("exit", 0))
"""


class ScriptedBuilder:
    """Each call answers with the next step of its plan (the last repeats); every brief it
    was given is kept in ``calls``."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.script = folder / "builder.py"
        self.script.write_text(BUILDER_SCRIPT)
        folder.chmod(0o777)  # the sandbox shows it to the agent, whose uid writes here
        self.plan_path = folder / "plan.json"
        self.log_path = folder / "calls.jsonl"
        self.log_path.touch()
        self.log_path.chmod(0o666)  # each run has a uid of its own, and each appends
        self.plan([{}])

    def plan(self, steps: list[dict[str, Any]]) -> None:
        self.plan_path.write_text(json.dumps(steps))

    @property
    def command(self) -> str:
        return f"{sys.executable} {self.script} {self.plan_path} {self.log_path}"

    def calls(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]


BASE_FILES = {
    "src/app.py": "def total(xs):\n    return 0\n",
    "tests/test_criteria.py": "from src.app import total\n\n\ndef test_total():\n"
    "    assert total([1, 2]) == 3\n",
    "docs/design.md": "total adds the numbers up\n",
}


def build_toml(
    project: str, command: str, mode: str = "normal", autonomy: list[str] | None = None
) -> str:
    """With ``[agents] writable`` naming the scripted builder's folder: it runs sandboxed
    like any agent, and writes there what it was given."""
    allowed = f"autonomy = {json.dumps(autonomy)}\n" if autonomy is not None else ""
    words = shlex.split(command)
    script = words[1] if len(words) > 1 and words[1].startswith("/") else None
    agents = f"\n[agents]\nwritable = [{json.dumps(str(Path(script).parent))}]\n" if script else ""
    return (
        f'[project]\nid = "{project}"\n\n[build]\ncommand = {json.dumps(command)}\n'
        f'roster = ["b1"]\ntimeout = 60\nmode = "{mode}"\n{allowed}{agents}'
    )


def setup(tmp_path: Path, project: str, command: str, mode: str = "normal") -> tuple[GitRepo, str]:
    """A repository whose trunk has the base files and a ``[build]`` table; its base sha."""
    repo = GitRepo(tmp_path / "repo")
    files = dict(BASE_FILES)
    files["loopbus.toml"] = build_toml(project, command, mode)
    base = repo.commit(files, ref="refs/heads/main")
    return repo, base


def configs(
    repo: GitRepo,
    project: str,
    command: str,
    mode: str = "normal",
    autonomy: list[str] | None = None,
) -> dict[str, RepoConfig]:
    text = build_toml(project, command, mode, autonomy)
    return {project: parse(text, repo=str(repo.path))}


async def dispatch(bus: Bus, project: str, unit: str, base: str, **extra: Any) -> None:
    """Plan ``unit`` (owning src/app.py, with one criterion) and dispatch it on ``base``."""
    await bus.publish(
        UnitPlanned(
            project=project,
            actor=SYSTEM,
            slice="S1",
            unit=unit,
            title="add the numbers",
            files=["src/app.py"],
            criteria=["tests/test_criteria.py::test_total"],
        )
    )
    await bus.publish(
        UnitDispatched(
            project=project,
            actor=SYSTEM,
            slice="S1",
            unit=unit,
            title="add the numbers",
            wave=0,
            sub_wave=0,
            position=0,
            files=["src/app.py"],
            criteria=["tests/test_criteria.py::test_total"],
            design_ref="docs/design.md",
            base=base,
            **extra,
        )
    )


@contextlib.asynccontextmanager
async def daemons(
    url: str, project: str, configs: Mapping[str, RepoConfig], data_dir: Path
) -> AsyncIterator[Kernel]:
    """The real units daemon and the builder daemon, each on its own connection."""
    units_bus = await connect(url, name="units-under-test")
    builder_bus = await connect(url, name="builder-under-test")
    try:
        async with running(units_bus, Units(projects=[project])):
            builder = Builder(builder_bus, configs, data_dir, heartbeat_s=0.1)
            async with running(builder_bus, builder) as kernel:
                yield kernel
    finally:
        await builder_bus.close()
        await units_bus.close()
