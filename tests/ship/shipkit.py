"""Builders for the ship tests: a real repository, and a closed slice's facts on the log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from schemas import Actor, Event, UnitPlanned
from schemas.decisions import DecisionRecorded
from schemas.slices import (
    BootResult,
    CommandRun,
    NotRun,
    PlannedUnit,
    PlanSubmission,
    RunEntryCompleted,
    SliceClosed,
    SlicePlan,
    SlicePlanAccepted,
    UnitDispatched,
)
from schemas.verify import SliceShipJudged

SYSTEM = Actor(role="system", principal="tests")
PLANNER = Actor(role="planner", principal="planner-1")
BUILDER = Actor(role="builder", principal="builder-1")

CRITERION = "tests/test_calc.py::test_total_is_sum"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def make_repo(path: Path, project: str, files: dict[str, str] | None = None) -> str:
    """A repository on branch ``main`` whose loopbus.toml configures ``tests`` (reads src/
    and tests/) and ``docs`` (reads docs/); returns trunk's commit."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "Test")
    toml = (
        f'[project]\nid = "{project}"\n\n'
        f'[[check]]\nid = "tests"\ncommand = "{sys.executable} -m pytest -q"\n'
        'parser = "pytest"\nreads = ["src/", "tests/"]\n\n'
        '[[check]]\nid = "docs"\ncommand = "mkdocs-strict --fail-on-warning"\n'
        'parser = "exit-code"\nreads = ["docs/"]\n'
    )
    commit(path, {"loopbus.toml": toml, **(files or {"src/calc.py": "x = 1\n"})}, "skeleton")
    return git(path, "rev-parse", "HEAD")


def commit(repo: Path, files: dict[str, str | None], message: str) -> str:
    """Write (or, for ``None``, delete) ``files`` and commit them; returns the sha."""
    for name, text in files.items():
        target = repo / name
        if text is None:
            git(repo, "rm", "-q", name)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def closed_slice(
    project: str, slice_id: str, *, boot: str = "pass", shipped: bool = True
) -> list[Event]:
    """A one-unit slice, run and closed as the dispatcher records it: the unit ran ``tests``
    (passed) and never ``docs``; it changed src/calc.py and notes/todo.txt; the dispatcher
    judged it ``shipped`` (or not, naming a floor)."""
    plan = SlicePlan(
        slice=slice_id,
        units=[
            PlannedUnit(id="U1", title="add total", files=["src/calc.py"], criteria=[CRITERION])
        ],
    )
    submission = PlanSubmission(project=project, actor=PLANNER, plan=plan)
    accepted = SlicePlanAccepted(project=project, actor=SYSTEM, plan=plan, cause=submission.id)
    dispatched = UnitDispatched(
        project=project, actor=SYSTEM, slice=slice_id, unit="U1", wave=0, sub_wave=0, position=0
    )
    entry = RunEntryCompleted(
        project=project,
        actor=SYSTEM,
        slice=slice_id,
        unit="U1",
        dispatch=dispatched.id,
        state="done",
        ended_by="merged",
        commands=[
            CommandRun(check="tests", command="python -m pytest -q", outcome="pass"),
        ],
        files_changed=["notes/todo.txt", "src/calc.py"],
        not_run=[NotRun(what="docs", why="in loopbus.toml but in no suite run")],
    )
    closed = SliceClosed(
        project=project,
        actor=SYSTEM,
        slice=slice_id,
        boot=BootResult(outcome=boot, command="python -m calc"),  # type: ignore[arg-type]
        done=["U1"],
    )
    return [
        submission,
        accepted,
        UnitPlanned(project=project, actor=SYSTEM, unit="U1", slice=slice_id),
        dispatched,
        entry,
        closed,
        SliceShipJudged(
            project=project,
            actor=SYSTEM,
            slice=slice_id,
            accepted=accepted.id,
            shipped=shipped,
            reasons=[] if shipped else ["unit U1: correctness 5 is below its floor 8"],
            closed=closed.id,
        ),
    ]


def auto_decision(project: str, slice_id: str) -> DecisionRecorded:
    return DecisionRecorded(
        project=project,
        actor=SYSTEM,
        question="which rounding for totals",
        options=["banker", "half-up"],
        chosen="half-up",
        owner="auto",
        slice=slice_id,
        unit="U1",
    )
