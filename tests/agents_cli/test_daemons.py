"""One line of ``loopbus.toml`` per role, end to end: the real builder and reviewer daemons
on a real server run ``loopbus agent claude --role …`` through the real sandbox, against a
stand-in ``claude`` (Claude Code's documented ``json`` output) on the sandbox-visible PATH.

The stand-ins' folder is a 0777 ``mkdtemp`` one named in ``[agents] writable`` (the
stand-in keeps its journal there); the daemon hands the agent its own ``PATH``, on which
``loopbus`` (loopbus's interpreter's folder) and then the stand-ins come first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builderkit import build_toml, daemons, dispatch, of, wait_log
from dulwich.repo import Repo
from reviewkit import (
    BASE_FILES,
    GateSigner,
    GitRepo,
    config_of,
    count,
    ready,
    running,
    setup_repo,
)
from standins import Standins, fenced, path_with

from bus import Bus
from schemas import Actor, FindingRaised, Outcome, UnitTransitioned
from schemas.reports import CommitReport
from schemas.reviews import (
    InvestigationCompleted,
    ReviewVerdict,
    RoundClosed,
    VerdictAccepted,
)
from schemas.slices import UsageReport
from workers.agents.config import parse
from workers.investigator.daemon import Investigator
from workers.reviewer.daemon import Reviewer

pytestmark = pytest.mark.slow

IMPLEMENTED_FILES = {"src/app.py": "def total(xs):\n    return sum(xs)\n"}
BUILD = "loopbus agent claude --role builder"
REVIEW = "loopbus agent claude --role reviewer"


async def test_a_builder_daemon_builds_a_unit_with_claude_by_one_line(
    bus: Bus,
    nats_url: str,
    project: str,
    tmp_path: Path,
    standins: Standins,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``[build] command = "loopbus agent claude --role builder"``: the stand-in edits the
    worktree and answers in a fence; the daemon commits the change and the unit's head is
    that commit, with the tokens Claude Code counted reported as the unit's usage."""
    monkeypatch.setenv("PATH", path_with(standins.dir))
    standins.plan(
        [
            {
                "write": IMPLEMENTED_FILES,
                "usage": {"in": 900, "out": 80},
                "message": fenced(
                    {
                        "schema": "loopbus.envelope.v2",
                        "status": "completed",
                        "summary": "total sums its input",
                    }
                ),
            }
        ]
    )
    text = (
        build_toml(project, BUILD) + f"\n[agents]\nwritable = {json.dumps([str(standins.dir)])}\n"
    )
    repo = GitRepo(tmp_path / "repo")
    base = repo.commit({**BASE_FILES_BUILD, "loopbus.toml": text}, ref="refs/heads/main")
    configs = {project: parse(text, repo=str(repo.path))}
    async with daemons(nats_url, project, configs, tmp_path / "data"):
        await dispatch(bus, project, "U1", base)
        events = await wait_log(
            bus, project, lambda es: of(UnitTransitioned, es, unit="U1", by="commit")
        )
    [commit] = of(CommitReport, events, unit="U1")
    [head] = of(UnitTransitioned, events, unit="U1", by="commit")
    assert head.commit == commit.sha
    [usage] = of(UsageReport, events, unit="U1")
    assert usage.tokens == 980
    assert blob(repo.path, commit.sha, "src/app.py") == IMPLEMENTED_FILES["src/app.py"]
    [call] = standins.calls()
    assert call["cli"] == "claude"
    assert "## The unit\nU1 of slice S1" in call["prompt"]
    assert "tests/test_criteria.py::test_total" in call["prompt"]


def blob(path: Path, sha: str, name: str) -> str:
    git = Repo(str(path))
    tree = git[git[sha.encode()].tree]  # type: ignore[attr-defined]
    _, blob_id = tree.lookup_path(git.object_store.__getitem__, name.encode())
    return git[blob_id].data.decode()  # type: ignore[attr-defined,no-any-return]


BASE_FILES_BUILD = {
    "src/app.py": "def total(xs):\n    return 0\n",
    "tests/test_criteria.py": "from src.app import total\n\n\ndef test_total():\n"
    "    assert total([1, 2]) == 3\n",
    "docs/design.md": "total adds the numbers up\n",
}


async def test_a_reviewer_daemon_approves_a_head_with_claude_by_one_line(
    bus: Bus,
    project: str,
    tmp_path: Path,
    standins: Standins,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``[review] command = "loopbus agent claude --role reviewer"``: the stand-in reads the
    diff in its prompt, in the read-only copy of the head, and approves; the daemon accepts
    the verdict and the round closes approved, the step before the merge."""
    monkeypatch.setenv("PATH", path_with(standins.dir))
    standins.plan([{"message": fenced({"verdict": "approve", "summary": "sums", "findings": []})}])
    review = {"command": REVIEW, "roster": ["alice", "bob"]}
    repo = setup_repo(tmp_path, project, review, agents={"writable": [str(standins.dir)]})
    head = repo.commit(
        {"src/app.py": BASE_FILES["src/app.py"].replace("return 0", "return sum(xs)")},
        parent=repo.base,  # type: ignore[attr-defined]
    )
    signer = GateSigner()
    await signer.register(bus, project)
    result = signer.result(project, "tests", head, "pass", [])
    await bus.publish(result)
    await bus.publish(signer.suite(project, "U1", head, [result]))
    async with running(bus, Reviewer(config_of(repo))):
        await ready(bus, project, "U1", head)
        events = await wait_log(bus, project, count(RoundClosed))
    [claim] = of(ReviewVerdict, events, unit="U1")
    [accepted] = of(VerdictAccepted, events, unit="U1")
    assert (accepted.decision, accepted.verdict) == ("approve", claim.id)
    [closed] = of(RoundClosed, events, unit="U1")
    assert (closed.passed, closed.action) == (True, "approved")
    [call] = standins.calls()
    assert "+    return sum(xs)" in call["prompt"] and "Read,Grep,Glob" in call["argv"]


async def test_an_investigator_daemon_investigates_with_gemini_by_one_line(
    bus: Bus,
    project: str,
    tmp_path: Path,
    standins: Standins,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``[investigator] command = "loopbus agent gemini --role investigator"``: on a unit's
    second failure the stand-in works in the read-only copy of trunk and reports; the report
    is the investigation's finding."""
    monkeypatch.setenv("PATH", path_with(standins.dir))
    report = {"summary": "the fixture never creates the table", "severity": "high"}
    standins.plan([{"message": fenced(report), "usage": {"in": 10, "out": 20}}])
    table = {"command": "loopbus agent gemini --role investigator"}
    repo = setup_repo(
        tmp_path, project, None, investigator=table, agents={"writable": [str(standins.dir)]}
    )
    system = Actor(role="system", principal="tests")
    first = RoundClosed(
        project=project, actor=system, unit="U1", round=1, head="a" * 40,
        finding_keys=["code:a.py:1-1|high|C1"], blocking_keys=["code:a.py:1-1|high|C1"],
        failure_signature="s", diff_digest="d1", passed=False, convergence="first",
        action="continue", cause="c",
    )  # fmt: skip
    second = UnitTransitioned(
        project=project, actor=system, unit="U1", state="failed", prior="working",
        by="gave-up", outcome=Outcome(summary="gave up", ended_by="report"),
    )  # fmt: skip
    async with running(bus, Investigator(config_of(repo))):
        await bus.publish(first)
        await bus.publish(second)
        events = await wait_log(
            bus, project, count(InvestigationCompleted, trigger="unit-failed:U1")
        )
    [completed] = of(InvestigationCompleted, events, trigger="unit-failed:U1")
    [finding] = of(FindingRaised, events, id=completed.finding)
    assert (finding.message, finding.severity) == (report["summary"], "high")
    [call] = standins.calls()
    assert call["cli"] == "gemini" and "unit-failed:U1" in call["prompt"]
    assert "loopbus.toml" in call["files"]  # it works in the copy of trunk
