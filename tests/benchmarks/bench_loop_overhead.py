"""The loop's own overhead per unit: a slice of N units with an instant builder and reviewer.

    python tests/benchmarks/bench_loop_overhead.py [--units 20] [--timeout 900]
        [--jobs N] [--capacity N] [--no-pace] [--builder-s S] [--test-work S]

A generated project of N modules, each with one pending criterion test, is run through
every daemon exactly as ``loopbus demo`` runs one (embedded server, ``Supervisor``, the
builder daemon running a builder that writes the module and clears its own pending
marker at once, a reviewer that approves at once). Measured from the log of this run:

* dispatch -> DONE per unit (``unit.dispatched`` to the ``merged`` transition);
* the part of it spent in gates: every gate result recorded for the unit's commits and
  for its merge (unit suite, merge candidate, trunk), summed per unit;
* the raw baseline, measured in the same run: the project's check command run directly on
  the project's files, with no loopbus, best of three before the slice (its first trunk)
  and three after it (its final trunk), so a load spike at one end of the run does not
  make the ratio look better than it is. ``python`` in the command resolves as the gate
  runner resolves it (this interpreter's folder first on PATH): resolved through the
  shell's PATH it can be a version manager's shim (pyenv's costs some 0.6 s a start on
  the project's machine), which would inflate the baseline and flatter the ratio;
* the tests check's wall and CPU seconds, raw and through the gate runner, so a slower
  gate run shows as more work (CPU) or as waiting for the cores (wall above CPU);
* where the rest goes (agents, gates, queueing, daemons and git) and the count of gate runs
  per unit by stage, from the log's own facts (:mod:`loop_breakdown`).

``--jobs``, ``--capacity`` and ``--no-pace`` pass ``loopbus up --jobs``, ``--capacity`` and
``--no-pace`` (default: what ``up`` gives, this machine's cores for both, paced).
``--builder-s S``: the builder takes S seconds per run (sleeping: it holds no core), so
units reach the gates spread out as with real agents rather than all at once.
``--test-work S``: each unit's test spends S seconds of CPU (a busy loop) before its
assertion, so the check costs about ``N * S`` seconds more than the bare one (a quarter
of a second here): how the loop's fixed cost per unit weighs against a check that does
real work.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dulwich import porcelain
from dulwich.repo import Repo
from loop_breakdown import breakdown, report

from bus import Bus, EmbeddedServer, connect, ensure_log, free_port, read
from loopbus.settings import DEFAULT_HEARTBEAT_LAPSE
from loopbus.supervisor import Supervisor, UpSettings
from schemas import Actor, Event, UnitTransitioned, project_subjects
from schemas.gates import GateResultRecorded, GateSuiteCompleted
from schemas.merges import TrunkAdvanced
from schemas.reports import CommitReport
from schemas.reviews import ReviewRequested, ReviewVerdict
from schemas.slices import (
    PlannedUnit,
    PlanSubmission,
    SliceClosed,
    SlicePlan,
    UnitDispatched,
)
from workers.runtime import configure_logging

PROJECT = "bench"
# Hypothesis (a dev dependency of loopbus, so in the interpreter this bench runs with)
# registers a pytest plugin whose import takes about 0.8 s here, in the raw run and in the
# gated one alike: a fixed cost that is not the project's and would flatter the ratio.
CHECK = "python -m pytest -q -p no:cacheprovider -p no:hypothesispytest tests"

BUILDER = r"""
import json, re, sys, time
from pathlib import Path
brief = json.load(sys.stdin)
time.sleep(BUILDER_S)
unit = brief["unit"]
Path(f"pkg/{unit}.py").write_text("def value() -> int:\n    return 1\n")
config = Path("loopbus.toml")
own = {c["test"] for c in brief["criteria"]}
config.write_text("".join(l for l in config.read_text().splitlines(True)
                          if not any(f'"{t}",' in l for t in own)))
print(json.dumps({"status": "completed", "summary": unit, "tokens": 1}))
"""

REVIEWER = 'import json, sys; json.load(sys.stdin); print(json.dumps({"verdict": "approve"}))\n'


def project(
    root: Path, units: int, agents: str = "", builder_s: float = 0.0, test_work: float = 0.0
) -> Path:
    """The generated repository: N stub modules, N pending criteria, committed on main."""
    repo_dir = root / PROJECT
    (repo_dir / "pkg").mkdir(parents=True)
    (repo_dir / "tests").mkdir()
    (repo_dir / "pkg" / "__init__.py").write_text("")
    (repo_dir / "tests" / "__init__.py").write_text("")
    (repo_dir / "tests" / "test_ok.py").write_text("def test_ok() -> None:\n    assert True\n")
    pending = []
    for i in range(units):
        name = f"m{i:02d}"
        (repo_dir / "pkg" / f"{name}.py").write_text("def value() -> int:\n    return 0\n")
        (repo_dir / "tests" / f"test_{name}.py").write_text(
            f"import time\n\nfrom pkg.{name} import value\n\n\n"
            "def test_value() -> None:\n"
            f"    end = time.process_time() + {test_work!r}\n"
            "    while time.process_time() < end:  # the work a real test does\n"
            "        pass\n"
            "    assert value() == 1\n"
        )
        pending.append(f'    # {name}\n    "tests/test_{name}.py::test_value",\n')
    (root / "agents").mkdir()
    (root / "agents" / "builder.py").write_text(BUILDER.replace("BUILDER_S", repr(builder_s)))
    (root / "agents" / "reviewer.py").write_text(REVIEWER)
    (repo_dir / "loopbus.toml").write_text(
        f'[project]\nid = "{PROJECT}"\n\n[[check]]\nid = "tests"\ncommand = "{CHECK}"\n'
        f'parser = "pytest"\npending = [\n{"".join(pending)}]\n\n'
        '[[check]]\nid = "boot"\ncommand = "python -c \'import pkg\'"\n\n'
        f'[build]\ncommand = "python {root / "agents" / "builder.py"}"\nroster = ["b1"]\n'
        f'mode = "long"\n\n[review]\ncommand = "python {root / "agents" / "reviewer.py"}"\n'
        'roster = ["r1"]\n\n'
        # The agents live outside the checkout: a sandboxed agent sees them only when named.
        f'[agents]\nread_only = ["{root / "agents"}"]\n{agents}'
    )
    with Repo.init(str(repo_dir)) as repo:
        repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
        files = [str(p) for p in repo_dir.rglob("*") if p.is_file() and ".git" not in p.parts]
        porcelain.add(repo, files)
        porcelain.commit(repo, b"bench project", author=b"b <b@x>", committer=b"b <b@x>")
    return repo_dir


async def run_slice(
    root: Path,
    repo: Path,
    units: int,
    timeout: float,
    jobs: int | None = None,
    capacity: int | None = None,
    paced: bool = True,
) -> list[Event]:
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
            jobs=jobs,
            capacity=capacity,
            paced=paced,
        )
    )
    running = asyncio.create_task(supervisor.run())
    try:
        await ensure_log(bus.js)
        plan = SlicePlan(
            slice="S1",
            units=[
                PlannedUnit(
                    id=f"m{i:02d}",
                    files=[f"pkg/m{i:02d}.py"],
                    criteria=[f"tests/test_m{i:02d}.py::test_value"],
                )
                for i in range(units)
            ],
        )
        planner = Actor(role="planner", principal="bench")
        await bus.publish(PlanSubmission(project=PROJECT, actor=planner, plan=plan))
        return await asyncio.wait_for(collect(bus), timeout)
    finally:
        supervisor.stopping.set()
        await running
        await bus.close()
        server.stop()


async def collect(bus: Bus) -> list[Event]:
    events: list[Event] = []
    async for record in read(bus, subjects=[project_subjects(PROJECT)], follow=True):
        if record.event is not None:
            events.append(record.event)
            if isinstance(record.event, SliceClosed):
                return events
    raise RuntimeError("the log ended")


def measure(events: list[Event]) -> tuple[dict[str, float], dict[str, float], dict[str, int]]:
    """(dispatch -> DONE seconds, gate seconds, gate runs) per unit, from the log."""
    dispatched: dict[str, float] = {}
    done: dict[str, float] = {}
    commits: dict[str, str] = {}  # commit -> unit (the unit's own and its merge commits)
    trees: dict[str, str] = {}  # tree -> unit, of its suites run on its merge onto trunk
    for event in events:
        match event:
            case UnitDispatched():
                dispatched.setdefault(event.unit, event.at.timestamp())
            case CommitReport():
                commits[event.sha] = event.unit
            case TrunkAdvanced():
                commits[event.merge] = event.unit
            case UnitTransitioned(state="done"):
                done[event.unit] = event.at.timestamp()
            case GateSuiteCompleted(unit=str(unit), tree=str(tree)) if getattr(event, "onto", None):
                trees[tree] = unit  # its results name the merge onto trunk it ran on
    gates: dict[str, float] = {unit: 0.0 for unit in done}
    runs: dict[str, int] = {unit: 0 for unit in done}
    for event in events:
        if isinstance(event, GateResultRecorded) and (
            event.commit in commits or event.tree in trees
        ):
            unit = commits.get(event.commit or "") or trees[event.tree]
            if unit in gates:
                gates[unit] += event.duration_s
                runs[unit] += 1
    total = {unit: done[unit] - dispatched[unit] for unit in done}
    return total, gates, runs


def agent_runs(events: list[Event]) -> tuple[dict[str, int], dict[str, int]]:
    """(builder runs, reviewer runs) per unit: a commit report per builder run that
    committed, a verdict per reviewer run."""
    builds: dict[str, int] = {}
    reviews: dict[str, int] = {}
    for event in events:
        if isinstance(event, CommitReport):
            builds[event.unit] = builds.get(event.unit, 0) + 1
        elif isinstance(event, ReviewVerdict):
            reviews[event.unit] = reviews.get(event.unit, 0) + 1
    return builds, reviews


def agent_phases(events: list[Event]) -> tuple[dict[str, float], dict[str, float]]:
    """(dispatch -> commit report, review requested -> verdict) seconds per unit: the
    builder's and the reviewer's turns, each holding one agent run and what the daemon
    does around it (worktree, commit, copy of the head), timed between their events."""
    marks: dict[type, dict[str, float]] = {}
    for event in events:
        if isinstance(event, UnitDispatched | CommitReport | ReviewRequested | ReviewVerdict):
            marks.setdefault(type(event), {}).setdefault(event.unit, event.at.timestamp())

    def between(start: type, end: type) -> dict[str, float]:
        first, then = marks.get(start, {}), marks.get(end, {})
        return {unit: then[unit] - first[unit] for unit in then if unit in first}

    return between(UnitDispatched, CommitReport), between(ReviewRequested, ReviewVerdict)


def most_in_flight(events: list[Event]) -> int:
    """The most units dispatched and not yet DONE at any moment of the run."""
    steps = sorted(
        (e.at, 1 if isinstance(e, UnitDispatched) else -1)
        for e in events
        if isinstance(e, UnitDispatched) or (isinstance(e, UnitTransitioned) and e.state == "done")
    )
    most = now = 0
    for _, step in steps:
        now += step
        most = max(most, now)
    return most


def raw_check(repo: Path) -> tuple[float, float]:
    """The check command on trunk's files, started directly (best of three): its wall
    time and the CPU seconds of that run's process tree."""
    best = (float("inf"), 0.0)
    # PATH as the gate runner gives it (workers.gates.environment.scrubbed_env).
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    env = dict(os.environ, PATH=path)
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(CHECK.split(), cwd=repo, env=env, capture_output=True, check=False)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        best = min(best, (wall, cpu))
    return best


def gated_check_runs(events: list[Event], check: str) -> list[tuple[float, float]]:
    """(wall, CPU seconds) of each run of ``check`` the gate runners actually made."""
    return [
        (event.duration_s, event.cost.cpu_s)
        for event in events
        if isinstance(event, GateResultRecorded)
        and event.check == check
        and event.cost is not None
        and event.cost.cpu_s is not None
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument(
        "--sandbox",
        choices=("auto", "none"),
        default="auto",
        help='"none" runs the agents unsandboxed ([agents] sandbox = "none"), for comparison',
    )
    parser.add_argument("--jobs", type=int, default=None, help="loopbus up --jobs")
    parser.add_argument("--capacity", type=int, default=None, help="loopbus up --capacity")
    parser.add_argument(
        "--no-pace", dest="paced", action="store_false", help="loopbus up --no-pace"
    )
    parser.add_argument(
        "--builder-s", type=float, default=0.0, help="seconds the builder takes per run"
    )
    parser.add_argument(
        "--test-work", type=float, default=0.0, help="CPU seconds each unit's test spends"
    )
    args = parser.parse_args()
    for name in ("builder_s", "test_work"):
        if not 0 <= getattr(args, name) <= 3600:
            flag = "--" + name.replace("_", "-")
            parser.error(f"{flag} {getattr(args, name)}: give seconds from 0 to 3600")
    configure_logging("error")
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"load average at start (1/5/15 min): {load}; builder takes {args.builder_s:g}s; "
        f"each test works {args.test_work:g}s of CPU; pacing {'on' if args.paced else 'off'}"
    )
    root = Path(tempfile.mkdtemp(prefix="loopbus-bench-"))
    try:
        agents = 'sandbox = "none"\n' if args.sandbox == "none" else ""
        repo = project(root, args.units, agents, args.builder_s, args.test_work)
        raw_before = raw_check(repo)
        started = time.perf_counter()
        events = asyncio.run(
            run_slice(root, repo, args.units, args.timeout, args.jobs, args.capacity, args.paced)
        )
        wall = time.perf_counter() - started
        porcelain.reset(str(repo), "hard", b"refs/heads/main")
        raw, raw_cpu = min(raw_before, raw_check(repo))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    total, gates, runs = measure(events)
    builds, reviews = agent_runs(events)
    building, reviewing = agent_phases(events)
    closed = events[-1]
    assert isinstance(closed, SliceClosed)
    n = len(total)
    median = statistics.median
    per_unit_overhead = [total[u] - gates[u] for u in total]
    print(
        f"units done: {n} of {args.units}; slice closed in {wall:.1f}s wall "
        f"(boot {closed.boot.outcome})"
    )
    print(
        f"dispatch -> DONE per unit: median {median(total.values()):.2f}s, "
        f"max {max(total.values()):.2f}s"
    )
    print(
        f"gate time per unit: median {median(gates.values()):.2f}s over "
        f"median {median(runs.values()):.0f} gate runs"
    )
    print(
        f"not gates (loop overhead + waiting in queues) per unit: median "
        f"{median(per_unit_overhead):.2f}s"
    )
    print(
        f"agent runs per unit (sandbox {args.sandbox}): median {median(builds.values()):.0f} "
        f"builder, {median(reviews.values()):.0f} reviewer; max "
        f"{max(builds.values())} and {max(reviews.values())}"
    )
    print(
        f"builder's turn (dispatch -> commit report) per unit: median "
        f"{median(building.values()):.2f}s; reviewer's turn (review requested -> verdict): "
        f"median {median(reviewing.values()):.2f}s"
    )
    print(
        f"raw check run (no loopbus): {raw:.2f}s; one unit's gate runs cost "
        f"{median(gates.values()) / (raw * median(runs.values())):.2f}x the raw runs; "
        f"dispatch -> DONE is {median(total.values()) / raw:.1f}x one raw run"
    )
    gated = gated_check_runs(events, "tests")
    print(
        f"the tests check, raw: {raw:.2f}s wall, {raw_cpu:.2f}s CPU; through the gate runner "
        f"({len(gated)} runs): median {median(w for w, _ in gated):.2f}s wall, "
        f"{median(c for _, c in gated):.2f}s CPU (wall above CPU is waiting for the cores)"
    )
    print(f"most units in flight at once: {most_in_flight(events)}")
    for line in report(breakdown(events)):
        print(line)
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average at the end (1/5/15 min): {load}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
