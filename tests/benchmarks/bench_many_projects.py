"""Many projects through the loop on the three-node cluster, with instant agents.

    python tests/benchmarks/bench_many_projects.py [--projects 10] [--units 100]
        [--projects-per-process 25] [--capacity 8] [--timeout 3600] [--raw 2000]

Starts compose.yaml's three NATS nodes as local processes (tests/local_cluster.py) with the
log at replication 3, makes ``--projects`` local repositories of ``--units`` stub modules
each (one check, ``true``; a builder script that writes its module at once; a reviewer
script that approves at once; no sandbox), and runs the real daemons on them: one
projector, one dispatcher (every repository), one units daemon (every project), and per
project a gate runner, a builder, a reviewer and a merger (those take one repository each).
Each project gets one slice of ``--units`` independent units. Measured in this run:

* raw: ``--raw`` findings published one at a time (each awaiting its ack) to the same
  cluster before any daemon starts: events per second the log takes from one publisher;
* the loop's events per second (every event of the bench projects, first to last);
* fold time per event: the run's log replayed through every fold in this process, the
  mean, and the first tenth against the last tenth (a fold O(n) per event shows here);
* resident memory per daemon (psutil), its peak during the run;
* ``loopbus status --project`` as a new process on the first project and on a one-unit
  project published beside them (the baseline);
* last dispatch -> last DONE, against the median dispatch -> DONE of one unit.

Budgets: docs/performance.md, "Many projects on the three-node cluster". Exits 1 when a
unit did not finish. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil
from dulwich import porcelain
from dulwich.repo import Repo

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the packages first: tests/bus is no bus

from local_cluster import LocalCluster  # noqa: E402

from bus import Bus, connect, ensure_log, read  # noqa: E402
from bus.retry import TRANSIENT, Backoff, retrying  # noqa: E402
from loopbus.supervisor import daemon_child  # noqa: E402
from projections import FOLDS, apply_guarded, initial_states  # noqa: E402
from schemas import (  # noqa: E402
    Actor,
    Event,
    FindingRaised,
    UnitPlanned,
    UnitTransitioned,
    parse_target,
    project_subjects,
)
from schemas.slices import PlannedUnit, PlanSubmission, SliceClosed, SlicePlan, UnitDispatched  # noqa: E402
from workers.runtime import configure_logging  # noqa: E402

PLANNER = Actor(role="planner", principal="bench")
SYSTEM = Actor(role="system", principal="bench")
ONE = "one"
"""The one-unit project ``status`` is compared with (published, no daemon acts on it)."""

BUILDER = r"""
import json, sys
from pathlib import Path
brief = json.load(sys.stdin)
Path(f"pkg/{brief['unit']}.py").write_text("VALUE = 1\n")
print(json.dumps({"status": "completed", "summary": brief["unit"], "tokens": 1}))
"""

REVIEWER = 'import json, sys; json.load(sys.stdin); print(json.dumps({"verdict": "approve"}))\n'


def make_project(root: Path, agents: Path, name: str, units: int) -> Path:
    """A repository of ``units`` stub modules whose one check is ``true``."""
    repo_dir = root / name
    (repo_dir / "pkg").mkdir(parents=True)
    (repo_dir / "pkg" / "__init__.py").write_text("")
    for i in range(units):
        (repo_dir / "pkg" / f"m{i}.py").write_text("VALUE = 0\n")
    (repo_dir / "loopbus.toml").write_text(
        f'[project]\nid = "{name}"\n\n[[check]]\nid = "noop"\ncommand = "true"\n'
        'parser = "exit-code"\n\n'
        f'[build]\ncommand = "python {agents / "builder.py"}"\nroster = ["b1"]\n\n'
        f'[review]\ncommand = "python {agents / "reviewer.py"}"\nroster = ["r1"]\n\n'
        '[agents]\nsandbox = "none"\n'
    )
    with Repo.init(str(repo_dir)) as repo:
        repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
        files = [str(p) for p in repo_dir.rglob("*") if p.is_file() and ".git" not in p.parts]
        porcelain.add(repo, files)
        porcelain.commit(repo, b"bench project", author=b"b <b@x>", committer=b"b <b@x>")
    return repo_dir


def daemon_commands(
    url: str, data: Path, repos: dict[str, Path], per_process: int
) -> dict[str, list[str]]:
    """name -> command line of every daemon of the run; the repository-bound daemons (gate
    runner, builder, reviewer, merger) serve ``per_process`` repositories each."""
    start = [sys.executable, "-P", "-m"]
    common = ["--nats-url", url, "--log-level", "warning"]
    every_repo = [w for p, r in repos.items() for w in ("--repo", f"{p}={r}")]
    commands = {
        "projector": [*start, "workers.projector", *common],
        "dispatcher": [
            *start,
            "workers.dispatcher",
            *common,
            "--data-dir",
            str(data),
            "--trunk",
            "main",
            *every_repo,
        ],
        "units": [*start, "workers.units", *common],
    }
    names = list(repos)
    for first in range(0, len(names), per_process):
        group = names[first : first + per_process]
        label = group[0] if len(group) == 1 else f"{group[0]}-{group[-1]}"
        at = [w for p in group for w in ("--repo", f"{p}={repos[p]}")]
        commands[f"gate-runner/{label}"] = [
            *start,
            "workers.gate_runner",
            *common,
            *at,
            "--data-dir",
            str(data),
            "--trunk",
            "main",
        ]
        commands[f"builder/{label}"] = [
            *start,
            "workers.builder",
            *common,
            *at,
            "--data-dir",
            str(data),
        ]
        commands[f"reviewer/{label}"] = [*start, "workers.reviewer", *common, *at]
        commands[f"merger/{label}"] = [
            *start,
            "workers.merger",
            *common,
            *at,
            "--data-dir",
            str(data),
            "--trunk",
            "main",
        ]
    return commands


class Fleet:
    """The run's daemons; one that exits is started again, as ``loopbus up`` does, and
    counted (a daemon may exit under heavy load: a connect or a publish timing out)."""

    def __init__(self, commands: dict[str, list[str]], logs: Path) -> None:
        self.commands = commands
        self.logs = logs
        self.restarts: dict[str, list[int]] = {}
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        logs.mkdir(parents=True, exist_ok=True)
        for name in commands:
            self.spawn(name)

    def spawn(self, name: str) -> None:
        with open(self.logs / f"{name.replace('/', '.')}.log", "ab") as sink:
            self.children[name] = subprocess.Popen(
                self.commands[name],
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=sink,
                env=os.environ | {"LOOPBUS_TRUNK": "main"},
                start_new_session=True,
                preexec_fn=daemon_child,
            )

    def revive(self) -> None:
        for name, child in list(self.children.items()):
            if child.poll() is not None:
                self.restarts.setdefault(name, []).append(child.returncode)
                self.spawn(name)


async def stacks_of(fleet: Fleet) -> None:
    """Ask every daemon for what its tasks wait on (SIGUSR1: ``daemon.stacks`` lines in its
    log, kept with the run's folder) before the run is stopped. Its children ignore the
    signal until their handler is installed (``daemon_child``), so a daemon just restarted
    is not ended by it."""
    for child in fleet.children.values():
        if child.poll() is None:
            os.kill(child.pid, signal.SIGUSR1)
    await asyncio.sleep(5)
    print(f"every daemon's tasks: the 'daemon.stacks.task' lines of each log in {fleet.logs}")


def stop(children: dict[str, subprocess.Popen[bytes]]) -> None:
    for child in children.values():
        if child.poll() is None:
            child.terminate()
    for child in children.values():
        try:
            child.wait(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


async def provision(bus: Bus) -> None:
    """The log at replication 3, retried while the cluster elects its meta leader."""

    async def attempt() -> None:
        await ensure_log(bus.js, replicas=3)

    await retrying(attempt, "provision the log at R3", Backoff(budget=60.0), transient=TRANSIENT)


def connections(cluster: LocalCluster) -> int:
    """Client connections over the three nodes (their monitoring endpoints)."""
    total = 0
    for base in cluster.monitors().values():
        with urllib.request.urlopen(f"{base}/connz", timeout=5) as reply:
            total += int(json.load(reply)["num_connections"])
    return total


async def started(cluster: LocalCluster, fleet: Fleet) -> float:
    """Wait until every daemon is connected (so its start-up is not timed as the loop's):
    seconds waited."""
    began = time.perf_counter()
    before = await asyncio.to_thread(connections, cluster)
    while await asyncio.to_thread(connections, cluster) < before + len(fleet.children):
        fleet.revive()
        await asyncio.sleep(0.5)
    await asyncio.sleep(2)  # their first read of the log (empty for them) and subscriptions
    return time.perf_counter() - began


def rss_mib(pid: int) -> float:
    """Resident memory of the daemon's own process (not the checks or git it starts), MiB."""
    try:
        return float(psutil.Process(pid).memory_info().rss) / 2**20
    except psutil.Error:
        return 0.0


async def raw_rate(bus: Bus, count: int) -> float:
    """Findings published one at a time, each awaiting its ack: events per second."""
    events = [
        FindingRaised(
            project="raw",
            actor=SYSTEM,
            producer="reviewer",
            target=parse_target(f"code:src/raw.py:{i + 1}-{i + 1}"),
            severity="low",
            criterion="C1",
            message="raw publish baseline",
        )
        for i in range(count)
    ]
    began = time.perf_counter()
    for event in events:
        await bus.publish(event)
    return count / (time.perf_counter() - began)


async def watch(
    bus: Bus,
    projects: list[str],
    fleet: Fleet,
    peaks: dict[str, float],
    events: list[Event],
) -> None:
    """The bench projects' events into ``events`` until every project's slice is closed;
    RSS sampled meanwhile."""
    open_ = set(projects)
    subjects = [project_subjects(p) for p in projects]
    last_sample = 0.0
    async for record in read(bus, subjects=subjects, follow=True):
        if time.monotonic() - last_sample > 2:
            last_sample = time.monotonic()
            fleet.revive()
            for name, child in fleet.children.items():
                peaks[name] = max(peaks.get(name, 0.0), rss_mib(child.pid))
        if record.event is None:
            continue
        events.append(record.event)
        if isinstance(record.event, SliceClosed):
            open_.discard(record.event.project)
            if not open_:
                return
    raise RuntimeError("the log ended")


def fold_times(events: list[Event]) -> tuple[float, float, float, dict[str, float]]:
    """(mean, first tenth's mean, last tenth's mean) seconds per event through every fold,
    and each fold's share of the total."""
    states: dict[str, dict[str, object]] = {}
    times: list[float] = []
    per_fold = dict.fromkeys((fold.name for fold in FOLDS), 0.0)
    for event in events:
        state = states.setdefault(event.project, initial_states())
        began = time.perf_counter()
        for fold in FOLDS:
            start = time.perf_counter()
            state[fold.name], _ = apply_guarded(fold, state[fold.name], event)
            per_fold[fold.name] += time.perf_counter() - start
        times.append(time.perf_counter() - began)
    tenth = max(1, len(times) // 10)
    mean = statistics.fmean
    total = sum(per_fold.values()) or 1.0
    shares = {name: spent / total for name, spent in per_fold.items()}
    return mean(times), mean(times[:tenth]), mean(times[-tenth:]), shares


def status_time(url: str, project: str, rounds: int = 3) -> float:
    """Median seconds of ``loopbus status --project P`` as a new process."""
    runs = []
    for _ in range(rounds):
        began = time.perf_counter()
        command = [sys.executable, "-m", "loopbus.cli", "status", "--project", project]
        done = subprocess.run([*command, "--nats-url", url], capture_output=True, text=True)
        runs.append(time.perf_counter() - began)
        if done.returncode != 0:  # a finding of the run, not a reason to lose its figures
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            print(f"loopbus status --project {project} exited {done.returncode}: {last}")
            return float("nan")
    return statistics.median(runs)


def one_unit_project() -> list[Event]:
    """The baseline project of status: one unit planned, one finding on it."""
    return [
        UnitPlanned(project=ONE, actor=SYSTEM, unit="U0", slice="S0", title="unit 0"),
        FindingRaised(
            project=ONE,
            actor=SYSTEM,
            producer="reviewer",
            target=parse_target("code:src/u0.py:1-1"),
            severity="medium",
            criterion="C1",
            message="baseline",
            unit="U0",
        ),
    ]


def plan(project: str, units: int) -> PlanSubmission:
    slice_ = SlicePlan(
        slice="S1",
        units=[PlannedUnit(id=f"m{i}", files=[f"pkg/m{i}.py"]) for i in range(units)],
    )
    return PlanSubmission(project=project, actor=PLANNER, plan=slice_)


def timings(events: list[Event]) -> tuple[dict[str, float], float, float]:
    """(dispatch -> DONE seconds per unit, last dispatch, last DONE) from the log."""
    dispatched: dict[str, float] = {}
    done: dict[str, float] = {}
    for event in events:
        key = f"{event.project}/{getattr(event, 'unit', '')}"
        if isinstance(event, UnitDispatched):
            dispatched.setdefault(key, event.at.timestamp())
        elif isinstance(event, UnitTransitioned) and event.state == "done":
            done[key] = event.at.timestamp()
    per_unit = {k: done[k] - dispatched[k] for k in done if k in dispatched}
    return per_unit, max(dispatched.values()), max(done.values(), default=float("nan"))


async def run(root: Path, args: argparse.Namespace) -> int:
    cluster = LocalCluster(root / "cluster", auth=False)  # who publishes is not measured
    (root / "cluster").mkdir()
    cluster.start()
    fleet: Fleet | None = None
    try:
        for name in cluster.nodes:
            await cluster.healthy(name)
        bus = await connect(cluster.url, name="bench")
        await provision(bus)
        raw = await raw_rate(bus, args.raw)
        await bus.publish_many(one_unit_project())
        agents = root / "agents"
        agents.mkdir()
        (agents / "builder.py").write_text(BUILDER)
        (agents / "reviewer.py").write_text(REVIEWER)
        names = [f"p{n}" for n in range(args.projects)]
        repos = {p: make_project(root / "repos", agents, p, args.units) for p in names}
        per_process = args.projects_per_process or args.projects
        commands = daemon_commands(cluster.url, root / "data", repos, per_process)
        if args.capacity is not None:
            commands["dispatcher"] += ["--capacity", str(args.capacity)]
        fleet = Fleet(commands, root / "logs")
        waited = await started(cluster, fleet)
        print(f"{len(fleet.children)} daemons connected after {waited:.1f} s")
        load_start = os.getloadavg()
        for project in names:
            await bus.publish(plan(project, args.units))
        peaks: dict[str, float] = {}
        began = time.perf_counter()
        events: list[Event] = []
        try:
            await asyncio.wait_for(watch(bus, names, fleet, peaks, events), args.timeout)
        except TimeoutError:  # the figures so far are still reported, with what is left
            print(f"NOT FINISHED within --timeout {args.timeout:.0f} s")
            await stacks_of(fleet)
        wall = time.perf_counter() - began
        load_end = os.getloadavg()
        for name, child in fleet.children.items():
            peaks[name] = max(peaks.get(name, 0.0), rss_mib(child.pid))
        status_big = await asyncio.to_thread(status_time, cluster.url, names[0])
        status_one = await asyncio.to_thread(status_time, cluster.url, ONE)
        await bus.close()
    finally:
        if fleet is not None:
            stop(fleet.children)
        cluster.stop()
    report(args, events, raw, wall, peaks, status_big, status_one, (load_start, load_end))
    print(f"daemons started again after exiting (name: exit codes): {fleet.restarts or 'none'}")
    closed = [e for e in events if isinstance(e, SliceClosed)]
    return 0 if sum(len(c.done) for c in closed) == args.projects * args.units else 1


def unfinished(events: list[Event]) -> list[str]:
    """project/unit of every unit dispatched and never done."""
    dispatched = {f"{e.project}/{e.unit}" for e in events if isinstance(e, UnitDispatched)}
    done = {
        f"{e.project}/{e.unit}"
        for e in events
        if isinstance(e, UnitTransitioned) and e.state == "done"
    }
    return sorted(dispatched - done)


def report(
    args: argparse.Namespace,
    events: list[Event],
    raw: float,
    wall: float,
    peaks: dict[str, float],
    status_big: float,
    status_one: float,
    loads: tuple[tuple[float, ...], tuple[float, ...]],
) -> None:
    closed = [e for e in events if isinstance(e, SliceClosed)]
    done = sum(len(c.done) for c in closed)
    # From the first plan: what a daemon published at its start is not the loop's work.
    first = min(e.at.timestamp() for e in events if isinstance(e, PlanSubmission))
    counted = [e for e in events if e.at.timestamp() >= first]
    span = max(e.at.timestamp() for e in counted) - first
    rate = len(counted) / span
    mean, head, last, shares = fold_times(events)
    per_unit, last_dispatch, last_done = timings(events)
    unit_median = statistics.median(per_unit.values())
    tail = last_done - last_dispatch
    kinds = {n.split("/")[0] for n in peaks}
    print(f"size run: {args.projects} projects x {args.units} units (capacity {args.capacity})")
    per_process = args.projects_per_process or args.projects
    print(f"{len(peaks)} daemon processes; repository-bound ones serve {per_process} projects each")
    print(f"load average at start {loads[0]}, at end {loads[1]}")
    print(f"units done {done} of {args.projects * args.units}; slices closed {len(closed)}")
    left = unfinished(events)
    if left:
        print(f"dispatched and not done ({len(left)}): {', '.join(left[:20])}")
    print(f"wall from first plan to last slice closed: {wall:.1f} s")
    print(f"raw publish (one at a time, acked) to the cluster: {raw:.0f} events/s")
    print(
        f"loop: {len(counted)} events in {span:.1f} s = {rate:.1f} events/s "
        f"({rate / raw:.4f} x raw; budget >= 0.01 x)"
    )
    print(
        f"fold time per event: mean {mean * 1e3:.3f} ms (budget <= 1 ms); first tenth "
        f"{head * 1e3:.3f} ms, last tenth {last * 1e3:.3f} ms, ratio {last / head:.2f} "
        "(budget <= 2)"
    )
    top = sorted(shares.items(), key=lambda item: -item[1])[:4]
    print("folds taking the most of it: " + ", ".join(f"{n} {v:.0%}" for n, v in top))
    for kind in sorted(kinds):
        values = [v for n, v in peaks.items() if n.split("/")[0] == kind]
        print(
            f"peak RSS {kind:12} max {max(values):6.0f} MiB, median "
            f"{statistics.median(values):6.0f} MiB over {len(values)} process(es) "
            "(budget <= 200 MiB)"
        )
    print(
        f"loopbus status --project p0: {status_big * 1e3:.0f} ms; one-unit project "
        f"{status_one * 1e3:.0f} ms; ratio {status_big / status_one:.2f} "
        "(budget <= 2 s and <= 3 x)"
    )
    print(
        f"last dispatch -> last DONE {tail:.1f} s; median dispatch -> DONE per unit "
        f"{unit_median:.1f} s (max {max(per_unit.values()):.1f} s); ratio "
        f"{tail / unit_median:.2f} (budget <= 3 x)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--projects", type=int, default=10)
    parser.add_argument("--units", type=int, default=100)
    parser.add_argument(
        "--capacity", type=int, default=None, help="the dispatcher's units in flight per project"
    )
    parser.add_argument(
        "--projects-per-process",
        type=int,
        default=25,
        metavar="N",
        help="repositories each gate runner, builder, reviewer and merger process serves "
        "(default %(default)s; 0: all in one process each; 1: one process per project)",
    )
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--raw", type=int, default=2000, help="findings in the raw baseline")
    parser.add_argument("--keep", action="store_true", help="keep the run's folder (logs)")
    args = parser.parse_args()
    configure_logging("error")
    root = Path(tempfile.mkdtemp(prefix="loopbus-many-"))
    code = 2  # an exception: the folder is kept for its logs
    try:
        code = asyncio.run(run(root, args))
        return code
    finally:
        if args.keep or code != 0:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
