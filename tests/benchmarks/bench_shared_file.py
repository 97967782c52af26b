"""A slice where every pair of units touches one shared file: rounds and dispatch -> DONE.

    python tests/benchmarks/bench_shared_file.py [--units 20] [--timeout 900] [--layout one-line]

A generated project of N modules, each with one pending criterion test, run through every
daemon as ``bench_loop_overhead.py`` runs one (embedded server, ``Supervisor``, sandboxed
agents as ``executor = "auto"`` picks). Unlike there, the N pending criteria sit on **one
line** of ``loopbus.toml`` (``pending = ["...m00...", "...m01...", ...]``, as a person
writes a short list), and every unit's contract clears its own entry from it, so every
pair of units edits the same line of the same file (``--layout per-line`` puts one entry
per line with a comment between, the layout ``loopbus init`` writes, for comparison).

The builder is instant: it writes its module and clears its own entry; when its brief
carries a ``conflict`` (issue 22) it writes ``loopbus.toml`` as trunk's version with its own
entry cleared (or, if the versions are not in the brief, resolves the file's conflict
markers: a pending list keeps what both sides kept). The reviewer approves at once.

Measured from the log of this run: builder rounds (each commit, gave-up or blocked answer
of the builder), reviews, merge conflicts, units DONE / failed / lost / held / unsettled,
dispatch -> DONE (median, max) and dispatch -> FAILED, and the raw baseline measured in the
same run: the project's check command run directly on the final trunk's files.

The run ends when the slice closes or at ``--timeout`` (a stalled loop: then it reports
what it saw and which units were still open). Exit 0 when it measured something, 1 when
the log holds no dispatch at all.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench_loop_overhead import CHECK, REVIEWER, raw_check
from dulwich import porcelain
from dulwich.repo import Repo

from bus import Bus, EmbeddedServer, connect, ensure_log, free_port, read
from loopbus.settings import DEFAULT_HEARTBEAT_LAPSE
from loopbus.supervisor import Supervisor, UpSettings
from schemas import Actor, Event, UnitTransitioned, project_subjects
from schemas.merges import MergeConflicted
from schemas.reports import BlockedReport, CommitReport, GaveUpReport
from schemas.reviews import ReviewVerdict
from schemas.slices import (
    PlannedUnit,
    PlanSubmission,
    SliceClosed,
    SlicePlan,
    UnitDispatched,
)
from workers.runtime import configure_logging

PROJECT = "shared"

BUILDER = r'''
import ast, json, sys
from pathlib import Path

brief = json.load(sys.stdin)
unit = brief["unit"]
own = {c["test"] for c in brief["criteria"]}


def listed(line):
    key, sep, rest = line.partition("=")
    if sep and key.strip() == "pending" and rest.strip().endswith("]"):
        return ast.literal_eval(rest.strip())
    return None


def one_line(kept):
    return "pending = [" + ", ".join(json.dumps(e) for e in kept) + "]\n"


def clear(text):
    """Own entries gone: from a one-line list, or their own lines in a long one."""
    out = []
    for line in text.splitlines(True):
        entries = listed(line)
        if entries is not None:
            line = one_line([e for e in entries if e not in own])
        elif any(json.dumps(t) in line for t in own):
            continue
        out.append(line)
    return "".join(out)


def unmark(text):
    """Conflict markers resolved: one pending line per side keeps what both kept; lines
    otherwise are kept when both sides have them."""
    out, side, sides = [], None, ([], [], [])
    for line in text.splitlines(True):
        if line.startswith("<<<<<<<"):
            side, sides = 0, ([], [], [])
        elif line.startswith("|||||||") and side is not None:
            side = 2
        elif line.startswith("=======") and side is not None:
            side = 1
        elif line.startswith(">>>>>>>") and side is not None:
            a, b = sides[0], sides[1]
            lists = [listed(x) for x in a + b]
            if len(a) == len(b) == 1 and None not in lists:
                out.append(one_line([e for e in lists[0] if e in lists[1]]))
            else:
                out += [x for x in a if x in b]
            side = None
        elif side is None:
            out.append(line)
        else:
            sides[side].append(line)
    return "".join(out)


conflict = brief.get("conflict") or {}
for entry in conflict.get("files", []):
    path = Path(entry["path"])
    trunk = entry.get("trunk")
    if isinstance(trunk, str) and entry["path"] == "loopbus.toml":
        path.write_text(clear(trunk))
    elif isinstance(entry.get("unit"), str) and entry["path"] != "loopbus.toml":
        path.write_text(entry["unit"])
    else:
        path.write_text(clear(unmark(path.read_text())))
if not conflict:
    Path(f"pkg/{unit}.py").write_text("def value() -> int:\n    return 1\n")
    Path("loopbus.toml").write_text(clear(Path("loopbus.toml").read_text()))
said = "resolved the conflict" if conflict else "built and cleared its entry"
print(json.dumps({"status": "completed", "summary": said, "tokens": 1}))
'''


def name(i: int) -> str:
    return f"m{i:02d}"


def project(root: Path, units: int, layout: str) -> Path:
    """The generated repository: N stub modules, N pending criteria, committed on main."""
    repo_dir = root / PROJECT
    (repo_dir / "pkg").mkdir(parents=True)
    (repo_dir / "tests").mkdir()
    (repo_dir / "pkg" / "__init__.py").write_text("")
    (repo_dir / "tests" / "__init__.py").write_text("")
    (repo_dir / "tests" / "test_ok.py").write_text("def test_ok() -> None:\n    assert True\n")
    criteria = []
    for i in range(units):
        (repo_dir / "pkg" / f"{name(i)}.py").write_text("def value() -> int:\n    return 0\n")
        (repo_dir / "tests" / f"test_{name(i)}.py").write_text(
            f"from pkg.{name(i)} import value\n\n\n"
            "def test_value() -> None:\n    assert value() == 1\n"
        )
        criteria.append(f'"tests/test_{name(i)}.py::test_value"')
    if layout == "one-line":
        pending = f"pending = [{', '.join(criteria)}]\n"
    else:
        entries = "".join(f"    # {name(i)}\n    {c},\n" for i, c in enumerate(criteria))
        pending = f"pending = [\n{entries}]\n"
    agents = root / "agents"
    agents.mkdir(mode=0o755)
    (agents / "builder.py").write_text(BUILDER)
    (agents / "reviewer.py").write_text(REVIEWER)
    (repo_dir / "loopbus.toml").write_text(
        f'[project]\nid = "{PROJECT}"\n\n[[check]]\nid = "tests"\ncommand = "{CHECK}"\n'
        f'parser = "pytest"\n{pending}\n'
        '[[check]]\nid = "boot"\ncommand = "python -c \'import pkg\'"\n\n'
        f'[build]\ncommand = "{sys.executable} {agents / "builder.py"}"\nroster = ["b1"]\n'
        f'mode = "long"\n\n[review]\ncommand = "{sys.executable} {agents / "reviewer.py"}"\n'
        'roster = ["r1"]\noversight = "full"\n\n'
        # The agents live outside the checkout: a sandboxed agent sees them only when named.
        f'[agents]\nread_only = ["{agents}"]\n'
    )
    with Repo.init(str(repo_dir)) as repo:
        repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
        files = [str(p) for p in repo_dir.rglob("*") if p.is_file() and ".git" not in p.parts]
        porcelain.add(repo, files)
        porcelain.commit(repo, b"bench project", author=b"b <b@x>", committer=b"b <b@x>")
    return repo_dir


async def run_slice(root: Path, repo: Path, units: int, timeout: float) -> tuple[list[Event], bool]:
    """The project's events once the slice closed (``True``), or at the timeout (``False``)."""
    server = EmbeddedServer(root / "data", port=free_port(), auth=None)
    await server.start()
    bus = await connect(server.url, name="bench")
    supervisor = Supervisor(
        UpSettings(
            nats_url=server.url,
            data_dir=root / "data",
            heartbeat_lapse=DEFAULT_HEARTBEAT_LAPSE,
            repo=repo,
            trunk="main",
        )
    )
    running = asyncio.create_task(supervisor.run())
    events: list[Event] = []
    try:
        await ensure_log(bus.js)
        plan = SlicePlan(
            slice="S1",
            units=[
                PlannedUnit(
                    id=name(i),
                    files=[f"pkg/{name(i)}.py"],
                    criteria=[f"tests/test_{name(i)}.py::test_value"],
                )
                for i in range(units)
            ],
        )
        planner = Actor(role="planner", principal="bench")
        await bus.publish(PlanSubmission(project=PROJECT, actor=planner, plan=plan))
        try:
            await asyncio.wait_for(collect(bus, events), timeout)
            return events, True
        except TimeoutError:
            return events, False
    finally:
        supervisor.stopping.set()
        await running
        await bus.close()
        server.stop()


async def collect(bus: Bus, events: list[Event]) -> None:
    """Append the project's events to ``events`` until the slice closes."""
    async for record in read(bus, subjects=[project_subjects(PROJECT)], follow=True):
        if record.event is not None:
            events.append(record.event)
            if isinstance(record.event, SliceClosed):
                return
    raise RuntimeError("the log ended")


class Figures:
    """What the log says about the run, per unit."""

    def __init__(self, events: list[Event]) -> None:
        self.dispatched: dict[str, float] = {}
        self.ended: dict[str, tuple[str, float]] = {}  # unit -> (terminal state, when)
        self.last: dict[str, str] = {}  # unit -> its last transition, said
        self.rounds: Counter[str] = Counter()  # builder answers: commit, gave up, blocked
        self.reviews: Counter[str] = Counter()
        self.conflicts: Counter[str] = Counter()
        self.why: Counter[str] = Counter()  # how failed units ended
        self.closed: SliceClosed | None = None
        self.kinds: dict[str, list[str]] = {}  # unit -> the kinds of its events, in order
        for event in events:
            self._add(event)
            unit = getattr(event, "unit", None)
            if isinstance(unit, str):
                self.kinds.setdefault(unit, []).append(event.kind)

    def _add(self, event: Event) -> None:
        match event:
            case UnitDispatched():
                self.dispatched.setdefault(event.unit, event.at.timestamp())
            case CommitReport() | GaveUpReport() | BlockedReport():
                self.rounds[event.unit] += 1
            case ReviewVerdict():
                self.reviews[event.unit] += 1
            case MergeConflicted():
                self.conflicts[event.unit] += 1
            case UnitTransitioned():
                block = f" ({event.block.reason} {event.block.subject})" if event.block else ""
                self.last[event.unit] = f"{event.state} by {event.by}{block}"
                if event.state in ("done", "failed", "lost"):
                    self.ended[event.unit] = (event.state, event.at.timestamp())
                    if event.state != "done" and event.outcome is not None:
                        self.why[f"{event.state}: {event.outcome.summary[:70]}"] += 1
                else:
                    self.ended.pop(event.unit, None)  # a unit tried again is open again
            case SliceClosed():
                self.closed = event

    def took(self, state: str) -> list[float]:
        return [
            when - self.dispatched[unit]
            for unit, (ended, when) in self.ended.items()
            if ended == state and unit in self.dispatched
        ]


def spread(values: list[float]) -> str:
    if not values:
        return "none"
    return f"median {statistics.median(values):.2f}s, max {max(values):.2f}s (n={len(values)})"


def report(figures: Figures, units: int, closed: bool, wall: float, raw: float) -> None:
    states = Counter(state for state, _ in figures.ended.values())
    open_units = sorted(set(figures.dispatched) - set(figures.ended))
    held = figures.closed.blocked if figures.closed else []
    ending = (
        f"slice closed in {wall:.1f}s wall (boot {figures.closed.boot.outcome})"
        if closed and figures.closed
        else f"slice NOT closed after {wall:.1f}s (timeout): a stalled run"
    )
    print(f"units: {units}; {ending}")
    print(
        f"units DONE {states['done']}, failed {states['failed']}, lost {states['lost']}, "
        f"held {len(held)}, never dispatched {units - len(figures.dispatched)}, "
        f"still open {len(open_units)}{': ' + ' '.join(open_units) if open_units else ''}"
    )
    for why, count in figures.why.most_common():
        print(f"  {count} x {why}")
    for unit in open_units:
        print(
            f"  open {unit}: {figures.last.get(unit, 'dispatched')}; builder rounds "
            f"{figures.rounds[unit]}, reviews {figures.reviews[unit]}, merge conflicts "
            f"{figures.conflicts[unit]}; its last events: "
            f"{', '.join(figures.kinds.get(unit, [])[-6:])}"
        )
    rounds = [figures.rounds[u] for u in figures.dispatched]
    print(
        f"builder rounds: {sum(rounds)} in all, per unit median "
        f"{statistics.median(rounds) if rounds else 0:.0f}, max {max(rounds, default=0)}; "
        f"reviews {sum(figures.reviews.values())}; merge conflicts "
        f"{sum(figures.conflicts.values())} (units with one: {len(figures.conflicts)})"
    )
    done = figures.took("done")
    print(f"dispatch -> DONE: {spread(done)}")
    print(f"dispatch -> FAILED: {spread(figures.took('failed'))}")
    ratio = f"{statistics.median(done) / raw:.1f}x" if done else "n/a (no unit DONE)"
    print(f"raw check run (no loopbus): {raw:.2f}s; dispatch -> DONE median is {ratio} one raw run")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=20)
    parser.add_argument(
        "--timeout", type=float, default=900, help="seconds before a stalled run is reported"
    )
    parser.add_argument(
        "--layout",
        choices=("one-line", "per-line"),
        default="one-line",
        help="the pending list on one line (every pair of units shares it) or one per line",
    )
    args = parser.parse_args()
    if args.units < 2 or args.timeout <= 0:
        parser.error("--units must be at least 2 and --timeout positive")
    configure_logging("error")
    root = Path(tempfile.mkdtemp(prefix="loopbus-bench-shared-"))
    root.chmod(0o755)  # the agents' folder under it is shown to sandboxed runs
    try:
        repo = project(root, args.units, args.layout)
        started = time.perf_counter()
        events, closed = asyncio.run(run_slice(root, repo, args.units, args.timeout))
        wall = time.perf_counter() - started
        porcelain.reset(str(repo), "hard", b"refs/heads/main")
        raw, _raw_cpu = raw_check(repo)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    figures = Figures(events)
    report(figures, args.units, closed, wall, raw)
    return 0 if figures.dispatched else 1


if __name__ == "__main__":
    sys.exit(main())
