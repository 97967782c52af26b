"""A conflict round, on the builder daemon and the real units daemon with a real repository.

The merger's part (its conflict finding, ``merge.conflicted`` and the ``returned`` move)
is published by the test as the system, on a trunk the test moved: the builder must take
the conflict from those facts and the repository alone. tests/builder/test_conflict_loop.py
runs the same story through every daemon of ``loopbus up``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from builderkit import configs, daemons, dispatch, of, setup, wait_log
from conflictkit import builder_folder, has_git
from dulwich.repo import Repo
from msgspec import json
from reviewkit import GitRepo

from bus import Bus
from projections.claims import Move, transition_event
from schemas import Actor, FindingRaised, FindingResolved, UnitTransitioned
from schemas.builds import Brief
from schemas.ids import new_id
from schemas.merges import MergeConflicted
from schemas.reports import CommitReport, GaveUpReport
from schemas.targets import CodeTarget
from workers.builder import conflict, worktree
from workers.entity_merge import merge_file

SYSTEM = Actor(role="system", principal="test-merger")
MINE = "def total(xs):\n    return sum(xs)\n"
TRUNK = "def total(xs):\n    return len(xs)\n"
RESOLVED = "def total(xs):\n    return sum(xs) + 0 * len(xs)\n"
MARKED = "<<<<<<< ours (function total)"


async def collide(bus: Bus, project: str, repo: Any, base: str) -> tuple[str, str, str]:
    """U1's first round commits MINE; trunk then moves to TRUNK (another unit's merge) and
    the merger's facts say U1's head collides with it. Returns (head, trunk, finding)."""
    await dispatch(bus, project, "U1", base)
    events = await wait_log(bus, project, lambda es: bool(of(CommitReport, es, unit="U1")))
    [first] = of(CommitReport, events, unit="U1")
    trunk = repo.commit({"src/app.py": TRUNK}, parent=base, ref="refs/heads/main")
    finding = FindingRaised(
        project=project,
        actor=SYSTEM,
        producer="trunk_gate",
        target=CodeTarget(path="src/app.py", start=2, end=2),
        severity="high",
        criterion="merge-clean",
        cls="merge-conflict",
        message="U1 collides with trunk in src/app.py",
        evidence={"head": first.sha, "trunk": trunk},
        unit="U1",
        owner="builder:U1",
    )
    await wait_log(bus, project, lambda es: bool(of(UnitTransitioned, es, unit="U1", by="commit")))
    conflicted = MergeConflicted(
        project=project,
        actor=SYSTEM,
        unit="U1",
        head=first.sha,
        base=trunk,
        paths=["src/app.py"],
        finding=finding.id,
        cause=new_id(),
    )
    back = transition_event(
        Move("U1", "working", "working", "returned", commit=first.sha), project, SYSTEM, new_id()
    )
    for event in (finding, conflicted, back):
        await bus.publish(event)
    return first.sha, trunk, finding.id


def committed(events: list[Any]) -> list[CommitReport]:
    return of(CommitReport, events, unit="U1")


def heads(events: list[Any]) -> list[UnitTransitioned]:
    """U1's commit transitions: the units daemon accepted each commit report."""
    return of(UnitTransitioned, events, unit="U1", by="commit")


async def test_the_conflict_round_starts_from_the_merge_and_records_a_merge_commit(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """After a conflict the next brief carries it (trunk's head, the merge base, the file's
    three versions, the region the driver could not combine); the worktree holds the merge
    with markers and a ``.git`` in the middle of that merge; an answer that leaves the
    markers is refused with the problem and nothing is committed; the resolution becomes a
    merge commit (parents: the unit's head, trunk's head) and closes the conflict finding."""
    with builder_folder() as agent:
        agent.plan(
            "U1",
            [
                {"write": {"src/app.py": MINE}},
                {},  # the conflict round, first try: leaves the markers
                {"write": {"src/app.py": RESOLVED}},
            ],
        )
        repo, base = setup(tmp_path, project, agent.command)
        async with daemons(
            nats_url, project, configs(repo, project, agent.command), tmp_path / "data"
        ):
            head, trunk, finding = await collide(bus, project, repo, base)
            events = await wait_log(bus, project, lambda es: len(heads(es)) >= 2)
        calls = agent.calls("U1")
    resolution = committed(events)[1]
    git = Repo(str(repo.path))
    made = git[resolution.sha.encode()]
    assert made.parents == [head.encode(), trunk.encode()]
    assert made.message.startswith(f"U1: merge trunk {trunk[:12]}, conflicts resolved".encode())
    assert git[git[made.tree].lookup_path(git.__getitem__, b"src/app.py")[1]].data == (
        RESOLVED.encode()
    )
    assert git.refs[f"refs/heads/loopbus/{project}/U1".encode()] == resolution.sha.encode()

    first_try, retry = calls[1], calls[2]
    brief = json.decode(json.encode(first_try["brief"]), type=Brief)
    assert brief.base == head and brief.problem == ""
    assert brief.conflict is not None
    assert (brief.conflict.trunk, brief.conflict.merge_base) == (trunk, base)
    assert brief.conflict.finding == finding
    [file] = brief.conflict.files
    assert (file.path, file.base, file.unit, file.trunk) == (
        "src/app.py",
        "def total(xs):\n    return 0\n",
        MINE,
        TRUNK,
    )
    [region] = file.regions
    assert (region.kind, region.name, region.reason) == ("function", "total", "both-modified")
    assert "sum(xs)" in region.unit and "len(xs)" in region.trunk and "0" in region.base
    assert MARKED in first_try["files"]["src/app.py"]
    assert "conflict markers are left in src/app.py" in retry["brief"]["problem"]
    assert "nothing was committed" in retry["brief"]["problem"]
    assert MARKED in retry["files"]["src/app.py"]  # the retry starts from the merge again
    if has_git():
        assert first_try["merge_head"] == trunk
        assert first_try["head"]["out"].strip() == head
        assert first_try["branch"]["out"].strip() == f"loopbus/{project}/U1"
        assert "UU src/app.py" in first_try["status"]["out"], first_try["status"]
    [closed] = of(FindingResolved, events, finding=finding)
    assert closed.actor.role == "system" and resolution.sha[:12] in closed.why
    assert heads(events)[-1].commit == resolution.sha


async def test_markers_left_twice_give_the_unit_up_and_commit_nothing(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """A builder that answers ``completed`` twice with the markers still in place: both
    problems are findings, the unit gives up, and its branch never moved off its head."""
    with builder_folder() as agent:
        agent.plan("U1", [{"write": {"src/app.py": MINE}}, {}])
        repo, base = setup(tmp_path, project, agent.command)
        async with daemons(
            nats_url, project, configs(repo, project, agent.command), tmp_path / "data"
        ):
            head, _trunk, _finding = await collide(bus, project, repo, base)
            events = await wait_log(bus, project, lambda es: bool(of(GaveUpReport, es)))
    assert len(committed(events)) == 1
    problems = [f.message for f in of(FindingRaised, events, cls="builder-failure")]
    assert len(problems) == 2 and all("conflict markers are left" in p for p in problems)
    git = Repo(str(repo.path))
    assert git.refs[f"refs/heads/loopbus/{project}/U1".encode()] == head.encode()


async def test_nothing_an_agent_writes_in_its_git_reaches_the_commit_or_a_ref(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """The agent drops ``MERGE_HEAD``, commits in its worktree's ``.git`` and points a
    branch at its own commit: the adapter's merge commit still has the parents the log
    says, and the project's repository has none of the agent's commits or refs."""
    rewrite = [
        ["update-ref", "-d", "MERGE_HEAD"],
        ["add", "-A"],
        ["-c", "user.name=a", "-c", "user.email=a@x", "commit", "-qm", "mine", "--no-verify"],
        ["update-ref", "refs/heads/evil", "HEAD"],
    ]
    with builder_folder() as agent:
        repo, base = setup(tmp_path, project, agent.command)
        agent.plan(
            "U1",
            [
                {"write": {"src/app.py": MINE}},
                {"write": {"src/app.py": RESOLVED}, "git": rewrite},
            ],
        )
        async with daemons(
            nats_url, project, configs(repo, project, agent.command), tmp_path / "data"
        ):
            head, trunk, _finding = await collide(bus, project, repo, base)
            events = await wait_log(bus, project, lambda es: len(committed(es)) >= 2)
        runs = agent.git_runs("U1")
    git = Repo(str(repo.path))
    made = git[committed(events)[1].sha.encode()]
    assert made.parents == [head.encode(), trunk.encode()]
    assert b"refs/heads/evil" not in git.refs.allkeys()
    if has_git():
        [ran] = runs
        assert [r["code"] for r in ran] == [0, 0, 0, 0], ran  # the agent's commit happened
        assert not any(c.message == b"mine\n" for c in _commits(git))


def _commits(git: Repo) -> list[Any]:
    return [obj for obj in (git[sha] for sha in git.object_store) if obj.type_name == b"commit"]


DOCS = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


def test_the_documented_conflict_brief_is_one_the_daemon_writes() -> None:
    """docs/agents.md's conflict brief decodes as a Brief with nothing dropped, its regions
    are the driver's for the file's three versions, and the worktree file shown is the
    driver's merge of them (ours the unit, theirs trunk)."""
    text = DOCS.read_text()
    found = re.search(r"<!-- conflict-brief-example -->\n```json\n(.*?)\n```", text, re.S)
    assert found is not None, "docs/agents.md has no conflict brief example"
    brief = json.decode(found[1].encode(), type=Brief)
    assert json.decode(json.encode(brief)) == json.decode(found[1].encode())
    assert brief.conflict is not None
    [file] = brief.conflict.files
    assert file.base is not None and file.unit is not None and file.trunk is not None
    merged = merge_file(file.base.encode(), file.unit.encode(), file.trunk.encode(), file.path)
    assert [(c.kind, c.name, c.reason) for c in merged.conflicts] == [
        (r.kind, r.name, r.reason) for r in file.regions
    ]
    assert [(h.base, h.ours, h.theirs) for c in merged.conflicts for h in c.hunks] == [
        (r.base, r.unit, r.trunk) for r in file.regions
    ]
    shown = text[found.end() :].split("```text\n", 1)[1].split("```", 1)[0]
    assert shown.encode() == merged.content


def test_a_file_the_unit_deleted_and_trunk_changed_is_trunks_in_the_worktree(
    tmp_path: Path,
) -> None:
    """Delete against change: the worktree holds trunk's version to keep or delete (as git
    leaves it), the brief says so (no unit version, ``delete-modify``), and git lists it
    as deleted by us."""
    repo = GitRepo(tmp_path / "repo")
    base = repo.commit({"app.py": "A = 1\n", "old.py": "one\n"}, ref="refs/heads/main")
    head = repo.commit({"app.py": "A = 2\n", "old.py": None}, parent=base)
    trunk = repo.commit({"old.py": "two\n"}, parent=base, ref="refs/heads/main")
    merged = conflict.merge(repo.path, head, trunk, finding="F1")
    [file] = merged.brief().files
    assert (file.path, file.base, file.unit, file.trunk) == ("old.py", "one\n", None, "two\n")
    assert [r.reason for r in file.regions] == ["delete-modify"]
    where = tmp_path / "work" / "tree"
    worktree.fresh(where)
    conflict.prepare(repo.path, merged, where, branch="loopbus/p/U1")
    assert (where / "old.py").read_text() == "two\n"
    assert (where / "app.py").read_text() == "A = 2\n"
    assert conflict.markers_left(where, merged) is None
    if has_git():
        status = subprocess.run(
            ["git", "status", "--porcelain"], cwd=where, capture_output=True, text=True
        )
        assert status.stdout == "DU old.py\n", status
