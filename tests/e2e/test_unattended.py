"""Unattended means unattended (issue 22, item 4): a real ``loopbus up`` at
``[build] mode = "long"`` and ``[review] oversight = "full"`` closes a three-unit slice with
every unit DONE and no operator act on the log.

The slice holds what stopped unattended runs:

* ``add`` and ``mul`` each clear their own criterion from one one-line list in
  ``loopbus.toml`` (``pending = ["...::test_add", "...::test_mul"]``, as a person writes it),
  dispatched together on the same trunk: whichever merges second meets the other's edit of
  that line;
* ``mean`` is red at its gate in its first round (a wrong mean), rejected by the reviewer in
  its second for something unrelated (a leftover debug print), answers that rejection once
  with a lazy round that changes nothing, and fixes it in the round after.

The builder and the reviewer are scripts written here from docs/agents.md and
docs/review.md alone (not ``loopbus.scripted``): the builder reads the brief on stdin,
edits its worktree and prints an envelope; when a brief carries ``conflict`` it writes the
resolved file from trunk's version of it. The reviewer reads the review request on stdin and
prints a verdict. Both live in a folder ``[agents] read_only`` names; the builder keeps a
journal (what it was asked, what it did) in a folder ``[agents] writable`` names, which is
how the test knows the lazy round happened and what each brief carried.

What the start of a run needs from an operator: ``loopbus up`` (its first-start adoption
of trunk's ``loopbus.toml`` is a system fact whose ``by`` names the account that ran it), and
a plan, submitted here as a planner's claim with the agent credential ``up`` hands out.
Neither is an operator-role event, so the log may hold none at all.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dulwich import porcelain
from dulwich.repo import Repo
from integrity.test_hostile_agent import Loop, running_up

from bus import connect_once, read
from bus.reader import Record
from schemas import UnitTransitioned
from schemas.adoption import ConfigAdopted
from schemas.gates import GateSuiteCompleted
from schemas.merges import MergeConflicted
from schemas.reports import CommitReport, GaveUpReport
from schemas.reviews import ReviewVerdict, RoundClosed
from schemas.slices import PlanSubmission, SliceClosed

pytestmark = pytest.mark.slow

P = "tally"
UNITS = ("add", "mean", "mul")
CLOSE_S = 600.0
"""A bound on the whole run, for a stalled loop to end the test with what it saw (a healthy
run closes in a few minutes on 2 busy cores). Never a timed assertion: nothing here depends
on how fast anything was."""

SHARED = "tests/test_criteria.py::test_add", "tests/test_criteria.py::test_mul"
MEAN = "stats_tests/test_mean.py::test_mean"

BUILDER = r'''
"""A builder written from docs/agents.md: the brief on stdin, one envelope on stdout.

add and mul write their function and clear their own criterion from `pending`. mean
goes wrong first (its gate is red), then leaves a debug print (the reviewer rejects it),
then answers that once with a lazy round that changes nothing, then fixes it. A brief
with `conflict` is answered by writing each conflicting file resolved.
"""
import ast, json, pathlib, sys

brief = json.load(sys.stdin)
unit = brief["unit"]
journal = pathlib.Path(sys.argv[1])
own = [c["test"] for c in brief.get("criteria", [])]
MODULES = {"add": "def add(a, b):\n    return a + b\n",
           "mul": "def mul(a, b):\n    return a * b\n"}
STUB = "def mean(xs):\n    return 0.0\n"
WRONG = "def mean(xs):\n    return sum(xs)\n"
DEBUG = "def mean(xs):\n    print('mean of', xs)\n    return sum(xs) / len(xs)\n"
RIGHT = "def mean(xs):\n    return sum(xs) / len(xs)\n"


def entries(line):
    head, sep, rest = line.partition("=")
    if sep and head.strip() == "pending" and rest.strip().startswith("["):
        try:
            return ast.literal_eval(rest.strip())
        except SyntaxError:
            return None  # a list over several lines: its entries are lines of their own
    return None


def one_line(kept):
    return "pending = [" + ", ".join(json.dumps(e) for e in kept) + "]\n"


def cleared(text):
    """The file with this unit's criteria gone from every one-line pending list."""
    out = []
    for line in text.splitlines(keepends=True):
        listed = entries(line)
        out.append(line if listed is None else one_line([e for e in listed if e not in own]))
    return "".join(out)


def from_markers(text):
    """A file left with conflict markers, resolved: both sides of a pending line keep what
    both kept (each side cleared its own entries); other lines must agree."""
    out, side, sides = [], None, ([], [], [])
    for line in text.splitlines(keepends=True):
        if line.startswith("<<<<<<<"):
            side, sides = 0, ([], [], [])
        elif line.startswith("|||||||") and side is not None:
            side = 2
        elif line.startswith("=======") and side is not None:
            side = 1
        elif line.startswith(">>>>>>>") and side is not None:
            ours, theirs = sides[0], sides[1]
            if ours == theirs:
                out += ours
            else:
                lists = [entries(x) for x in ours + theirs]
                if len(ours) != 1 or len(theirs) != 1 or None in lists:
                    raise SystemExit(f"cannot resolve {ours!r} against {theirs!r}")
                out.append(one_line([e for e in lists[0] if e in lists[1]]))
            side = None
        elif side is None:
            out.append(line)
        else:
            sides[side].append(line)
    return "".join(out)


def resolve(conflict):
    """Each conflicting file: loopbus.toml is trunk's file with this unit's edit (its own
    criteria cleared) made again; anything else is this unit's own file."""
    for entry in conflict.get("files", []):
        path = pathlib.Path(entry["path"])
        trunk, mine = entry.get("trunk"), entry.get("unit")
        if entry["path"] == "loopbus.toml" and isinstance(trunk, str):
            path.write_text(cleared(trunk))
        elif entry["path"] != "loopbus.toml" and isinstance(mine, str):
            path.write_text(mine)
        else:  # the versions are not where this script looks: the markers say it too
            path.write_text(cleared(from_markers(path.read_text())))


def act():
    if brief.get("conflict"):
        resolve(brief["conflict"])
        return "resolve"
    config = pathlib.Path("loopbus.toml")
    if unit in MODULES:
        module = pathlib.Path(f"tally/{unit}.py")
        again = module.read_text() == MODULES[unit]  # nothing in the brief says what else
        module.write_text(MODULES[unit])
        config.write_text(cleared(config.read_text()))
        return "again" if again else "build"
    module = pathlib.Path("tally/mean.py")
    now = module.read_text()
    if now == STUB:
        module.write_text(WRONG)
        config.write_text(cleared(config.read_text()))
        return "wrong"
    if now == WRONG:
        module.write_text(DEBUG)
        return "debug"
    if now == DEBUG and not list(journal.glob("mean.*.lazy.json")):
        return "lazy"  # answers the rejection with no change at all
    module.write_text(RIGHT)
    return "fix"


action = act()
done = len(list(journal.glob(f"{unit}.*.json")))
(journal / f"{unit}.{done + 1:02d}.{action}.json").write_text(
    json.dumps({"action": action, "brief": brief})
)
print(json.dumps({"schema": "loopbus.envelope.v1", "status": "completed",
                  "summary": f"{unit}: {action}", "tokens": 100}))
'''

REVIEWER = r'''
"""A reviewer written from docs/review.md: the request on stdin, one verdict on stdout.
It rejects an added line that prints (debug output left in) and approves anything else."""
import json, re, sys

request = json.load(sys.stdin)
findings, path, line = [], None, 0
for text in request["diff"].splitlines():
    if text.startswith("+++ "):
        path = text[6:] if text.startswith("+++ b/") else None
    elif text.startswith("--- ") or text.startswith("diff ") or text.startswith("\\"):
        continue
    elif text.startswith("@@"):
        line = int(re.match(r"@@ -\S+ \+(\d+)", text).group(1))
    elif text.startswith("+"):
        if path and "print(" in text:
            findings.append({
                "target": {"type": "code", "path": path, "start": line, "end": line},
                "severity": "medium", "criterion": "no-debug-output",
                "message": f"{path}:{line} prints on every call: debug output left in"})
        line += 1
    elif text.startswith(" "):
        line += 1
verdict = "reject" if findings else "approve"
print(json.dumps({"verdict": verdict, "summary": f"{len(findings)} finding(s)",
                  "findings": findings}))
'''

PLAN = """\
[slice]
id = "S1"

[[unit]]
id = "add"
title = "add two numbers"
files = ["tally/add.py"]
criteria = ["tests/test_criteria.py::test_add"]

[[unit]]
id = "mul"
title = "multiply two numbers"
files = ["tally/mul.py"]
criteria = ["tests/test_criteria.py::test_mul"]

[[unit]]
id = "mean"
title = "the mean of a list"
files = ["tally/mean.py"]
criteria = ["stats_tests/test_mean.py::test_mean"]
"""

FILES = {
    ".gitignore": "__pycache__/\n",
    "tally/__init__.py": '"""A small calculator."""\n',
    "tally/__main__.py": (
        "import sys\n\nfrom tally.add import add\nfrom tally.mean import mean\n"
        "from tally.mul import mul\n\n"
        'if "--probe" in sys.argv:\n    print("tally boots:", mean([add(1, 2), mul(2, 3)]))\n'
    ),
    "tally/add.py": "def add(a, b):\n    return 0\n",
    "tally/mul.py": "def mul(a, b):\n    return 0\n",
    "tally/mean.py": "def mean(xs):\n    return 0.0\n",
    "tests/__init__.py": "",
    "tests/test_imports.py": "import tally\n\n\ndef test_imports() -> None:\n    assert tally\n",
    "tests/test_criteria.py": (
        "from tally.add import add\nfrom tally.mul import mul\n\n\n"
        "def test_add() -> None:\n    assert add(2, 3) == 5\n\n\n"
        "def test_mul() -> None:\n    assert mul(2, 3) == 6\n"
    ),
    "stats_tests/__init__.py": "",
    "stats_tests/test_stats_imports.py": (
        "import tally.mean\n\n\ndef test_stats_imports() -> None:\n    assert tally.mean\n"
    ),
    "stats_tests/test_mean.py": (
        "from tally.mean import mean\n\n\n"
        "def test_mean() -> None:\n    assert mean([1, 2, 3]) == 2\n"
    ),
    "plan.toml": PLAN,
}


def config(agents: Path, journal: Path) -> str:
    builder = f"{sys.executable} {agents / 'builder.py'} {journal}"
    reviewer = f"{sys.executable} {agents / 'reviewer.py'}"
    return (
        f'[project]\nid = "{P}"\n\n'
        '[[check]]\nid = "tests"\ncommand = "python -m pytest -q -p no:cacheprovider tests"\n'
        f'parser = "pytest"\ntimeout = 120\npending = {json.dumps(list(SHARED))}\n\n'
        '[[check]]\nid = "stats"\n'
        'command = "python -m pytest -q -p no:cacheprovider stats_tests"\n'
        f'parser = "pytest"\ntimeout = 120\npending = ["{MEAN}"]\n\n'
        '[[check]]\nid = "boot"\ncommand = "python -m tally --probe"\n'
        'parser = "exit-code"\ntimeout = 60\n\n'
        f'[build]\ncommand = {json.dumps(builder)}\nroster = ["b1", "b2"]\ntimeout = "2m"\n'
        'mode = "long"\n\n'
        f'[review]\ncommand = {json.dumps(reviewer)}\nroster = ["r1"]\ntimeout = "1m"\n'
        'oversight = "full"\n\n'
        f"[agents]\nread_only = {json.dumps([str(agents)])}\n"
        f"writable = {json.dumps([str(journal)])}\n"
    )


def repository(folder: Path, agents: Path, journal: Path) -> Path:
    """The project on ``main``: three stub modules, their pending criteria, the plan."""
    files = {**FILES, "loopbus.toml": config(agents, journal)}
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    with Repo.init(str(folder)) as repo:
        repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
        porcelain.add(repo, [str(folder / name) for name in files])
        porcelain.commit(
            repo, b"tally: stubs, criteria, plan", author=b"t <t@x>", committer=b"t <t@x>"
        )
    return folder


@pytest.fixture
def outside() -> Iterator[tuple[Path, Path]]:
    """The agents' folder (read-only to them) and the builder's journal (writable to every
    sandboxed run, whatever its uid), outside pytest's private tmp_path."""
    root = Path(tempfile.mkdtemp(prefix="loopbus-e2e-"))
    root.chmod(0o755)
    agents, journal = root / "agents", root / "journal"
    agents.mkdir(mode=0o755)
    journal.mkdir()
    journal.chmod(0o777)
    (agents / "builder.py").write_text(BUILDER)
    (agents / "reviewer.py").write_text(REVIEWER)
    try:
        yield agents, journal
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def records(loop: Loop) -> list[Record]:
    bus = await connect_once(loop.url, creds=loop.cred("reader"))
    try:
        return [r async for r in read(bus, subjects=[f"loop.{P}.>"]) if r.event is not None]
    finally:
        await bus.close()


async def until_closed(loop: Loop) -> tuple[SliceClosed | None, list[Record]]:
    """The log once slice S1 closed, or as it stands when the bound runs out."""
    seen: list[Record] = []
    try:
        async with asyncio.timeout(CLOSE_S):
            while True:
                seen = await records(loop)
                for record in seen:
                    if isinstance(record.event, SliceClosed) and record.event.slice == "S1":
                        return record.event, seen
                await asyncio.sleep(1.0)
    except TimeoutError:
        return None, seen


def journal_of(journal: Path, unit: str) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(journal.glob(f"{unit}.*.json"))]


def story(log: list[Record], journal: Path) -> str:
    """What happened to each unit, for a failure message: its transitions, why it gave up,
    its rounds and merge conflicts, and what the builder did in each round."""
    lines = []
    for unit in UNITS:
        lines.append(f"{unit}:")
        for record in log:
            event = record.event
            if getattr(event, "unit", None) != unit:
                continue
            if isinstance(event, UnitTransitioned):
                outcome = event.outcome
                said = f" ({outcome.ended_by}: {outcome.summary})" if outcome else ""
                lines.append(f"  -> {event.state} by {event.by}{said}")
            elif isinstance(event, GaveUpReport):
                lines.append(f"  gave up: {event.why}")
            elif isinstance(event, RoundClosed):
                lines.append(
                    f"  round {event.round} ({event.source}): {event.convergence} -> "
                    f"{event.action} {event.why}"
                )
            elif isinstance(event, MergeConflicted):
                lines.append(f"  merge conflicted on {event.paths}")
        actions = [
            f"{e['action']}{' (conflict in brief)' if e['brief'].get('conflict') else ''}"
            for e in journal_of(journal, unit)
        ]
        lines.append(f"  builder rounds: {', '.join(actions) or 'none'}")
    return "\n".join(lines)


async def test_a_slice_closes_with_every_unit_done_and_no_operator_act(
    tmp_path: Path, outside: tuple[Path, Path]
) -> None:
    agents, journal = outside
    repo = repository(tmp_path / "repo", agents, journal)
    with running_up(tmp_path / "data", "--repo", str(repo)) as loop:
        submitted = loop.cli(
            "plan", "submit", str(repo / "plan.toml"), "--project", P, "--wait", "60"
        )
        assert submitted.returncode == 0, submitted.stdout + submitted.stderr
        closed, log = await until_closed(loop)
    said = story(log, journal)

    # Every unit DONE: the slice closed, nothing failed, lost or held, and trunk boots.
    assert closed is not None, f"slice S1 did not close within {CLOSE_S:g}s:\n{said}"
    assert (sorted(closed.done), closed.failed, closed.lost, closed.blocked) == (
        sorted(UNITS),
        [],
        [],
        [],
    ), f"slice S1 closed with units not done:\n{said}"
    assert closed.boot.outcome == "pass", said

    # No operator act: the plan was the start (a planner's claim), and nothing after it
    # (nor before) came from the operator role: no decision, approval, adoption, unblock.
    [plan] = [r for r in log if isinstance(r.event, PlanSubmission)]
    assert plan.event.actor.role == "planner"
    acts = [
        f"seq {r.seq}: {type(r.event).__name__} by {r.event.actor.principal}"
        for r in log
        if r.event.actor.role == "operator"
    ]
    assert acts == [], f"operator acts on the log:\n{acts}\n{said}"
    adoptions = [r.event.why for r in log if isinstance(r.event, ConfigAdopted)]
    assert adoptions[0] == "first-start" and set(adoptions[1:]) <= {"merge"}, adoptions

    # It was the slice the issue describes, not an easier one.
    events = [r.event for r in log]
    mean_suites = [e for e in events if isinstance(e, GateSuiteCompleted) and e.unit == "mean"]
    first_commit = next(e.sha for e in events if isinstance(e, CommitReport) and e.unit == "mean")
    assert [s.outcome for s in mean_suites if s.commit == first_commit] == ["fail"], said
    rejects = [
        e
        for e in events
        if isinstance(e, ReviewVerdict) and e.unit == "mean" and e.verdict == "reject"
    ]
    assert rejects and all(f.criterion == "no-debug-output" for r in rejects for f in r.findings)
    mean_actions = [e["action"] for e in journal_of(journal, "mean")]
    steps = iter(mean_actions)
    assert all(step in steps for step in ("wrong", "debug", "lazy", "fix")), mean_actions

    # Both one-line list edits reached trunk: one was combined with the other, by the merge
    # driver or by the builder from a conflict brief. A conflict the merger reported reached
    # that unit's next brief.
    with Repo(str(repo)) as opened:
        tree = opened[opened[opened.refs[b"refs/heads/main"]].tree]  # type: ignore[attr-defined]
        text = opened[tree[b"loopbus.toml"][1]].data.decode()  # type: ignore[attr-defined]
    checks = {c["id"]: c for c in tomllib.loads(text)["check"]}
    assert not checks["tests"].get("pending") and not checks["stats"].get("pending"), text
    for unit in ("add", "mul"):
        conflicts = [e for e in events if isinstance(e, MergeConflicted) and e.unit == unit]
        briefs = [e["brief"] for e in journal_of(journal, unit)]
        carried = [b for b in briefs if b.get("conflict")]
        assert len(carried) >= len(conflicts), f"{unit}'s briefs lack the conflict:\n{said}"
