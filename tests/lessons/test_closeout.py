"""Closeout on a real server and a real git repository: a closed slice's merged unit
branches are deleted with their checkouts, an unmerged branch and a checkout holding
uncommitted work are kept, and the branch hygiene is a fact ``status`` shows."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from kernelkit import running
from lessonkit import closed, dispatched
from plannerview import fold_with_projector

from bus import Bus
from loopbus.render import render_state
from projections import lessons
from workers.lessons.closeout import close_out
from workers.lessons.daemon import Lessons


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def commit(repo: Path, name: str, text: str) -> str:
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", name)
    return git(repo, "rev-parse", "HEAD")


def repository(tmp: Path, project: str) -> tuple[Path, Path]:
    """Trunk with A and C merged, B not; checkouts of A, B and C under the units folder,
    C's holding an uncommitted change."""
    repo, units = tmp / "repo", tmp / "units"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "app.py", "x = 1\n")
    for unit in ("A", "B", "C"):
        git(repo, "checkout", "-q", "-b", f"loopbus/{project}/{unit}", "main")
        commit(repo, f"{unit}.py", f"{unit} = 1\n")
        git(repo, "checkout", "-q", "main")
        if unit != "B":
            git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "merge", "-q", "--no-ff",
                "-m", f"merge {unit}", f"loopbus/{project}/{unit}")  # fmt: skip
        git(repo, "worktree", "add", "-q", str(units / unit), f"loopbus/{project}/{unit}")
    (units / "C" / "C.py").write_text("C = 2  # not committed\n")
    return repo, units


async def test_closeout_deletes_merged_unit_branches_and_keeps_unmerged_work(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    repo, units = repository(tmp_path, project)
    unmerged = git(repo, "rev-parse", f"loopbus/{project}/B")
    daemon = Lessons(repo=repo, trunk="main", units_dir=units, projects=[project])
    async with running(bus, daemon) as kernel:
        for unit in ("A", "B", "C"):
            await bus.publish(dispatched(project, "S1", unit))
        await bus.publish(closed(project, "S1", ("A", "C")))
        state: lessons.LessonsState = kernel.project_states(project)[lessons.FOLD.name]
        await kernel.until(lambda: "S1" in state.closed_out, 60)
    out = state.closed_out["S1"]
    assert out.deleted == [f"loopbus/{project}/A"]
    assert out.removed == [str(units / "A")] and not (units / "A").exists()
    kept = {k.branch: k.why for k in out.kept}
    assert kept[f"loopbus/{project}/B"].startswith("unmerged work kept: 1 commit(s)")
    assert "was not removed" in kept[f"loopbus/{project}/C"]  # uncommitted work in it
    assert (out.branches, out.worktrees) == (2, 2)
    branches = git(
        repo, "for-each-ref", "--format=%(refname:short)", f"refs/heads/loopbus/{project}"
    )
    assert branches.split() == [f"loopbus/{project}/B", f"loopbus/{project}/C"]
    assert git(repo, "rev-parse", f"loopbus/{project}/B") == unmerged  # never touched
    assert (units / "C" / "C.py").read_text() == "C = 2  # not committed\n"
    shown = "\n".join(render_state("lessons", state))
    assert "closeout S1: deleted 1 unit branches, removed 1 checkouts; 2 unit branches" in shown
    await fold_with_projector(bus, nats_url)  # and `loopbus status` shows it from the views
    command = [sys.executable, "-m", "loopbus.cli", "status", "--project", project]
    status = await asyncio.to_thread(
        subprocess.run,
        [*command, "--nats-url", nats_url],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert status.returncode == 0, status.stderr
    [line] = [x.strip() for x in status.stdout.splitlines() if "closeout S1" in x]
    assert line.startswith("closeout S1: deleted 1 unit branches, removed 1 checkouts; 2 unit")
    assert f"loopbus/{project}/B (unmerged work kept: 1 commit(s)" in line


def test_without_git_nothing_is_collapsed_and_the_fact_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, units = repository(tmp_path, "p")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no git to list the checkouts
    hygiene = close_out(repo, "main", "p", ["A", "B", "C"], units)
    assert hygiene.problem.startswith("git is not installed")
    assert hygiene.deleted == [] and hygiene.branches == 3 and (units / "A").exists()
