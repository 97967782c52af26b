"""`loopbus demo` and `loopbus init`, run as a newcomer runs them."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from dulwich import porcelain
from dulwich.repo import Repo

from workers.repository import resolve

from .conftest import LOOPBUS, loopbus

pytestmark = pytest.mark.slow


def test_demo_runs_a_whole_charter_to_its_end() -> None:
    """The demo shows a whole run happen and exits 0 with the charter met: the charter
    approved, slice 1 planned by the planner and closed (every step of the loop on the
    way), slice 2 planned with a contract that lands on trunk before its units start,
    slice 2 closed, the run ended met, and the run's summary."""
    result = loopbus("demo", "--timeout", "240", timeout=300)
    assert result.code == 0, result.out + result.err
    out = result.out
    for needle in (
        "charter calc-v1 submitted and approved by the operator: 7 criteria",
        "charter calc-v1 approved by",
        "planner proposed slice S1 (try 1): 3 units; submitted",
        "plan S1 accepted: 3 units (ops, stats, fmt)",
        "ops: dispatched (position 1)",
        "fmt: dispatched (position 2)",
        "stats: dispatched (position 3)",
        "ops: gates red",
        "tests/test_criteria.py::test_mul failed",
        "ops: builder b1 committed",
        "stats: review by r1: reject",
        "divides by the length of an empty list",
        "stats: review by r1: approve",
        "fmt: novel decision 'rounding' -> cents (by auto, confidence high)",
        "ops: DONE",
        "stats: DONE",
        "fmt: DONE",
        "slice S1 closed: boot pass (python -m calc --probe); 3 done, 0 failed, 0 lost",
        "planner proposed slice S2 (try 1): 2 units with a contract; submitted",
        "plan S2 accepted: 2 units (sub, thousands)",
        "added compiles, test_sub, test_format_thousands",
        "sub: DONE",
        "thousands: DONE",
        "slice S2 closed: boot pass (python -m calc --probe); 2 done, 0 failed, 0 lost",
        "criteria on trunk",
        "run ended: met (every criterion holds on trunk",
        "criteria: 7 of 7 criteria hold on trunk",
        "slices: 2 (S1, S2)",
        "the run ended with the charter met: 2 slices closed",
    ):
        assert needle in out, f"{needle!r} missing from the demo's timeline:\n{out}"
    lines = out.splitlines()
    # Slice 2's contract lands after slice 1 closed (trunk green) and before any unit of
    # slice 2 is dispatched: each starts on a trunk that holds its pending criteria.
    closed_s1 = index_of(lines, "slice S1 closed")
    landed = index_of(lines, "contract of S2 landed as ")
    first_s2 = min(index_of(lines, "sub: dispatched"), index_of(lines, "thousands: dispatched"))
    assert closed_s1 < landed < first_s2, out
    contract = lines[landed].split("landed as ")[1].split(":")[0]
    assert f"dispatched (position 1) on {contract}" in out, out
    # The run ends after the last slice closed, never before.
    assert index_of(lines, "slice S2 closed") < index_of(lines, "run ended: met"), out
    dispatched = [i for i, line in enumerate(lines[:closed_s1]) if ": dispatched (position" in line]
    # ops and stats both own calc/__init__.py, so stats waits for ops to merge: it is
    # dispatched on the trunk that has ops's change, and nothing is "combined" for it.
    assert [lines[i].split("] ")[1].split(":")[0] for i in dispatched] == ["ops", "fmt", "stats"]
    merged_ops = next(i for i, line in enumerate(lines) if "ops: merged into main" in line)
    assert dispatched[2] > merged_ops
    assert combined_edits(lines) & {("ops", "fmt"), ("fmt", "ops")}, out
    assert not combined_edits(lines) & {("ops", "stats"), ("stats", "ops")}, out


def index_of(lines: list[str], needle: str) -> int:
    return next(i for i, line in enumerate(lines) if needle in line)


def combined_edits(lines: list[str]) -> set[tuple[str, str]]:
    """(merged unit, earlier unit) for each "loopbus.toml also changed by" line.

    ops and fmt run at once and each clears its own pending criteria in loopbus.toml, so
    whichever merges second has its edit combined with the other's: which one that is,
    timing decides. stats is never combined with ops (it waits for ops, so ops's edit is
    in its base), and nothing but loopbus.toml is ever combined (the other shared file,
    calc/__init__.py, belongs to units the plan runs one after the other)."""
    found = set()
    for line in lines:
        said = line.split("] ", 1)[-1]
        if "also changed by" not in said:
            continue
        unit, rest = said.split(":", 1)
        assert rest.startswith("   loopbus.toml also changed by "), line
        assert rest.endswith(": combined by the entity merge driver"), line
        found.add((unit, rest.split("also changed by ", 1)[1].split(":")[0]))
    return found


def test_init_scaffolds_a_committed_project(tmp_path: Path) -> None:
    """init writes a project whose trunk is main with every file committed, whose ordinary
    test passes and whose criteria are pending; a non-empty directory is refused."""
    target = tmp_path / "calc"
    result = loopbus("init", str(target))
    assert result.code == 0, result.err
    assert f"loopbus up --repo {target}" in result.out
    status = subprocess.run(
        ["git", "-C", str(target), "status", "--porcelain", "--branch"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert status.stdout.splitlines() == ["## main"]
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=target, capture_output=True, text=True,
    )  # fmt: skip
    assert "4 failed, 1 passed" in tests.stdout  # the 4 pending criteria fail on their assert
    check = loopbus("plan", "check", str(target / "plan.toml"), "--repo", str(target))
    assert check.code == 0, check.out + check.err
    bare = tmp_path / "calc.git"
    porcelain.clone(str(target), str(bare), bare=True, errstream=io.BytesIO())
    on_bare = loopbus("plan", "check", str(target / "plan.toml"), "--repo", str(bare))
    assert on_bare.code == 0, on_bare.err  # read from the trunk commit: no working tree
    assert "4 pending criteria" in on_bare.out and on_bare.err == ""
    again = loopbus("init", str(target))
    assert again.code == 2 and "exists and is not empty" in again.err


def test_init_with_a_relative_path_commits_every_file(tmp_path: Path) -> None:
    """`loopbus init calc`, as the README types it: the commit holds the scaffold (it once
    held an empty tree, and `up` then found no loopbus.toml on trunk)."""
    done = subprocess.run(
        [*LOOPBUS, "init", "calc"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    tree = subprocess.run(
        ["git", "-C", str(tmp_path / "calc"), "ls-tree", "-r", "--name-only", "main"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert {"loopbus.toml", "plan.toml", "calc/__init__.py"} <= set(tree.stdout.split())


def test_init_names_the_project_after_its_directory(tmp_path: Path) -> None:
    """`loopbus init shop` makes project shop (trunk's [project] id, and every next step it
    prints); --project names another; a name that cannot be an id is one line, exit 2."""
    done = loopbus("init", str(tmp_path / "shop"))
    assert done.code == 0, done.err
    assert "project shop scaffolded" in done.out and "--project shop\n" in done.out
    assert "--new" not in done.out  # `up --repo` opens the project: its first plan is not
    with Repo(str(tmp_path / "shop")) as repo:
        text = resolve(tmp_path / "shop", repo.refs[b"refs/heads/main"].decode()).config_text
    assert text is not None and '[project]\nid = "shop"\n' in text
    named = loopbus("init", str(tmp_path / "other"), "--project", "shop-v2")
    assert named.code == 0 and "project shop-v2 scaffolded" in named.out, named.err
    assert 'id = "shop-v2"' in (tmp_path / "other" / "loopbus.toml").read_text()
    spaced = loopbus("init", str(tmp_path / "my shop"))
    assert spaced.code == 2 and spaced.err.count("\n") == 1, spaced.err
    assert "directory name 'my shop' cannot be a project id" in spaced.err
    assert "pass --project ID" in spaced.err and not (tmp_path / "my shop").exists()


def test_init_names_an_empty_name_and_a_file_for_what_they_are(tmp_path: Path) -> None:
    """`init ''` was taken for the current directory ("'.' exists and is not empty") and a
    file was "not empty": each is one line naming the real problem, exit 2."""
    (tmp_path / "afile").write_text("x\n")
    empty = subprocess.run(
        [*LOOPBUS, "init", ""], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert empty.returncode == 2, empty.stderr
    assert empty.stderr.splitlines() == [
        "loopbus: error: DIR '' is empty: name the directory to create (loopbus init calc)"
    ]
    a_file = loopbus("init", str(tmp_path / "afile"))
    assert a_file.code == 2, a_file.err
    assert a_file.err.splitlines() == [
        f"loopbus: error: {str(tmp_path / 'afile')!r} is a file, not a directory: pass a new "
        "directory's name"
    ]
    assert (tmp_path / "afile").read_text() == "x\n"
