"""Findings from tool output: correct paths and lines, producer gate_runner, criterion = the
check, and published in one atomic batch with the result that lists them."""

from __future__ import annotations

from collections.abc import Callable

from gate_repos import LINT_CHECK, GitRepo, config, pytest_project
from gatekit import run_commit

from bus import Bus, read
from schemas import FindingRaised, GateResultRecorded
from schemas.targets import CodeTarget
from workers.gates.runner import GateRunner

HELPER = "def check_sum(value):\n    assert value == 3, f'got {value}'\n"
USES_HELPER = (
    "from calc import total\nfrom tests.helpers import check_sum\n\n\n"
    "def test_total_is_sum():\n    check_sum(total([1, 2]))\n"
)


async def test_pytest_failure_points_at_the_failing_line(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """A failing test's finding targets the innermost frame inside the repository."""
    repo = git("repo")
    files = pytest_project(
        project,
        pending=(),
        **{
            "tests/helpers.py": HELPER,
            "tests/__init__.py": "",
            "tests/test_criteria.py": USES_HELPER,
        },
    )
    run = (await run_commit(make_runner(repo), repo.commit(files), checks=["tests"])).check("tests")
    assert run.outcome == "fail"
    (finding,) = run.findings
    assert finding.target == CodeTarget(path="tests/helpers.py", start=2, end=2)
    assert finding.producer == "gate_runner" and finding.criterion == "tests"
    assert "got 0" in finding.message
    assert finding.evidence["nodeid"] == "tests/test_criteria.py::test_total_is_sum"


async def test_ruff_findings_carry_paths_and_line_ranges(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """Each ruff diagnostic becomes a finding on its file and rows (start to end)."""
    repo = git("repo")
    files = {
        "loopbus.toml": config(project, LINT_CHECK),
        "pkg/unsorted.py": "import sys\nimport os\n\nprint(sys, os)\n",
        "pkg/unused.py": "\n\nimport json\n",
    }
    run = (await run_commit(make_runner(repo), repo.commit(files))).check("lint")
    assert run.outcome == "fail"
    targets = sorted(((f.target, f.evidence["code"]) for f in run.findings), key=repr)
    assert targets == [
        (CodeTarget(path="pkg/unsorted.py", start=1, end=2), "I001"),
        (CodeTarget(path="pkg/unused.py", start=3, end=3), "F401"),
    ]
    assert all(f.criterion == "lint" and f.severity == "medium" for f in run.findings)


async def test_result_and_findings_are_one_atomic_batch(
    bus: Bus, git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """The findings sit immediately before their result on the log, listed by id, in order,
    and carry the unit they were raised for."""
    repo = git("repo")
    files = {"loopbus.toml": config(project, LINT_CHECK), "a.py": "import os\nimport sys\n"}
    run = (await run_commit(make_runner(repo), repo.commit(files), unit="U1", reason="unit")).check(
        "lint"
    )
    assert run.seq is not None and len(run.findings) == 2
    records = [
        r
        async for r in read(
            bus, subjects=[f"loop.{project}.>"], start_seq=run.seq - 2, until_seq=run.seq
        )
    ]
    assert [r.seq for r in records] == [run.seq - 2, run.seq - 1, run.seq]
    *found, result = [r.event for r in records]
    assert isinstance(result, GateResultRecorded) and result.findings == [f.id for f in found]
    for finding in found:
        assert isinstance(finding, FindingRaised)
        assert finding.unit == "U1" and finding.owner == "builder:U1"
        assert finding.evidence["tree"] == result.tree
    assert records[-1].subject == f"loop.{project}.gate.lint"
    assert {r.subject for r in records[:-1]} == {f"loop.{project}.finding.gate_runner"}


async def test_a_cached_red_result_reraises_its_findings_for_a_new_unit(
    bus: Bus, git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """A unit answered from another's cached fail still gets the findings, addressed to it."""
    repo = git("repo")
    commit = repo.commit({"loopbus.toml": config(project, LINT_CHECK), "a.py": "import os\n"})
    runner = make_runner(repo)
    await run_commit(runner, commit, unit="U1", reason="unit")
    second = await run_commit(runner, commit, unit="U2", reason="unit")
    assert second.check("lint").cached
    copies = [
        r.event
        async for r in read(bus, subjects=[f"loop.{project}.finding.gate_runner"])
        if isinstance(r.event, FindingRaised) and r.event.unit == "U2"
    ]
    assert len(copies) == 1
    assert copies[0].evidence["cached_from"] == second.check("lint").result.id
