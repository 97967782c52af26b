"""A gate runner and a builder SIGKILLed mid-item: how long until another replica finishes it.

    python tests/benchmarks/bench_lease_takeover.py [--rounds 3] [--ttl 2] [--work 8]

One embedded nats-server. Each round starts two replicas on a fresh project, gives them
one item whose work takes ``--work`` seconds (a check that sleeps; a scripted builder
that sleeps, then writes the unit's file), waits for a replica's lease on it, and
SIGKILLs that replica's process group (the replica and the work it started). Printed per
round, from the log and the kill's own clock reading:

* kill -> takeover: the other replica's ``lease.taken`` naming the lapsed holder (the
  lease is ``--ttl`` seconds and was last renewed at most ``--ttl``/3 before the kill);
* kill -> finished: the gate suite of the ask, or the unit's commit transition;
* the baseline measured in the same run: the work itself (``--work`` seconds) plus
  whatever of the lease was left, so kill -> finished can be no less than ``--work``;
* twice: checks run twice on one tree and suites answered twice (gate), commit reports
  for the unit (builder): the round fails unless the item finished exactly once.

Exits 1 when an item ran twice or was not finished. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HELPERS = ("leases", "gate_runner", "builder")
sys.path[:0] = [str(ROOT), str(ROOT / "tests")] + [str(ROOT / "tests" / f) for f in HELPERS]

from builderkit import ScriptedBuilder, dispatch, running, setup  # noqa: E402
from gate_repos import GitRepo  # noqa: E402
from logkit import of, wait_log  # noqa: E402
from replicas import Runner, answered, commits, doubled  # noqa: E402

from bus import Bus, EmbeddedServer, connect, ensure_log, free_port  # noqa: E402
from schemas import Actor, Event, UnitTransitioned  # noqa: E402
from schemas.gates import GateRunRequested, GateSuiteCompleted  # noqa: E402
from schemas.leases import LeaseTaken  # noqa: E402
from schemas.reports import CommitReport  # noqa: E402
from workers.runtime import configure_logging  # noqa: E402
from workers.units.daemon import Units  # noqa: E402

ASKER = Actor(role="system", principal="bench")
WAIT_S = 300.0
IMPLEMENTED = {"src/app.py": "def total(xs):\n    return sum(xs)\n"}


class Round:
    """One kill: the seconds measured and what ran twice."""

    def __init__(self, kind: str, work: str, killed_at: float, events: list[Event], done_at: float):
        lapsed = [e for e in of(LeaseTaken, events) if e.lapsed is not None]
        takeovers = [e for e in lapsed if e.work == work]
        self.kind = kind
        self.takeovers = len(takeovers)
        # A runner killed mid-check also held the check's own lease: it lapses beside the ask's.
        self.also = sorted(e.work for e in lapsed if e.work != work)
        self.to_takeover = takeovers[0].at.timestamp() - killed_at if takeovers else float("nan")
        self.to_finished = done_at - killed_at
        self.twice = 0


async def ready(logs: list[Path], processes: list[subprocess.Popen[bytes]]) -> None:
    """Every replica has read the log to its end."""
    async with asyncio.timeout(WAIT_S):
        while not all(p.exists() and b"daemon.caught_up" in p.read_bytes() for p in logs):
            for process in processes:
                assert process.poll() is None, f"a replica exited: see {logs}"
            await asyncio.sleep(0.1)


def kill_group(pid: int) -> float:
    """SIGKILL a replica and everything it started; the wall-clock time of the kill."""
    os.killpg(pid, signal.SIGKILL)
    return time.time()


async def gate_round(bus: Bus, url: str, home: Path, n: int, args: argparse.Namespace) -> Round:
    project = f"gate{n}x{os.getpid()}"
    repo = GitRepo(home / project)
    [sha] = commits(repo, project, 1, seconds=args.work)
    runners = [Runner(f"r{i}-{n}", repo.path, url, home, lease_ttl=args.ttl) for i in (1, 2)]
    for runner in runners:
        runner.start()
    try:
        await ready([r.log for r in runners], [r.process for r in runners if r.process])
        ask = GateRunRequested(project=project, actor=ASKER, commit=sha)
        await bus.publish(ask)
        events = await wait_log(bus, project, _taken("gate"), WAIT_S)
        [first] = of(LeaseTaken, events, work="gate")
        victim = next(r for r in runners if f":{r.pid}:" in first.holder)
        await asyncio.sleep(args.work / 4)  # well inside the check
        killed_at = kill_group(victim.pid)
        events = await wait_log(bus, project, lambda es: answered(es, {ask.id}), WAIT_S)
    finally:
        for runner in runners:
            runner.stop()
    [suite] = of(GateSuiteCompleted, events, cause=ask.id)
    result = Round("gate runner", "gate", killed_at, events, suite.at.timestamp())
    result.twice = len(doubled(events))
    return result


async def builder_round(bus: Bus, url: str, home: Path, n: int, args: argparse.Namespace) -> Round:
    project = f"build{n}x{os.getpid()}"
    folder = home / project
    agent = ScriptedBuilder(folder / "agent")
    script = agent.script.read_text()
    agent.script.write_text(f"import time\ntime.sleep({args.work})\n{script}")
    agent.plan([{"write": IMPLEMENTED, "stdout": {"status": "completed", "summary": "sum"}}])
    repo, base = setup(folder, project, agent.command)
    logs = [folder / f"b{i}.log" for i in (1, 2)]
    builders = [_builder(repo.path, url, folder / f"b{i}", log, args.ttl) for i, log in
                zip((1, 2), logs, strict=True)]  # fmt: skip
    units_bus = await connect(url, name=f"units-{project}")
    try:
        await ready(logs, builders)
        async with running(units_bus, Units(projects=[project])):
            await dispatch(bus, project, "U1", base)
            events = await wait_log(bus, project, _taken("build"), WAIT_S)
            [first] = of(LeaseTaken, events, work="build")
            [victim] = [p for p in builders if f":{p.pid}:" in first.holder]
            await asyncio.sleep(args.work / 4)  # well inside the agent's run
            killed_at = kill_group(victim.pid)
            events = await wait_log(bus, project, _committed, WAIT_S)
    finally:
        for process in builders:
            if process.poll() is None:
                process.terminate()
                await asyncio.to_thread(process.wait, 30)
        await units_bus.close()
    [commit] = of(UnitTransitioned, events, unit="U1", by="commit")
    result = Round("builder", "build", killed_at, events, commit.at.timestamp())
    result.twice = len(of(CommitReport, events, unit="U1")) - 1
    return result


def _builder(repo: Path, url: str, data: Path, log: Path, ttl: float) -> subprocess.Popen[bytes]:
    with open(log, "ab") as sink:
        return subprocess.Popen(
            [
                sys.executable, "-P", "-m", "workers.builder", "--repo", str(repo),
                "--nats-url", url, "--data-dir", str(data), "--jobs", "1",
                "--lease-ttl", str(ttl),
            ],
            stdout=sink, stderr=sink, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip


def _taken(work: str) -> Callable[[list[Event]], bool]:
    return lambda events: bool(of(LeaseTaken, events, work=work))


def _committed(events: list[Event]) -> bool:
    return bool(of(UnitTransitioned, events, unit="U1", by="commit"))


async def run(home: Path, args: argparse.Namespace) -> list[Round]:
    server = EmbeddedServer(home / "nats", port=free_port(), auth=None)
    await server.start()
    bus = await connect(server.url, name="bench")
    rounds: list[Round] = []
    try:
        await ensure_log(bus.js)
        for n in range(args.rounds):
            rounds.append(await gate_round(bus, server.url, home, n, args))
            rounds.append(await builder_round(bus, server.url, home, n, args))
    finally:
        await bus.close()
        server.stop()
    return rounds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ttl", type=float, default=2.0, help="lease seconds (--lease-ttl)")
    parser.add_argument("--work", type=float, default=8.0, help="seconds an item's work takes")
    args = parser.parse_args()
    configure_logging("error")
    print(f"load average at start {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="loopbus-takeover-") as tmp:
        rounds = asyncio.run(run(Path(tmp), args))
    print(f"load average at end {os.getloadavg()}")
    print(f"lease {args.ttl} s; the item's work {args.work} s (the baseline: no kill)")
    ok = True
    for kind in ("gate runner", "builder"):
        mine = [r for r in rounds if r.kind == kind]
        for r in mine:
            print(
                f"{kind:12} kill -> takeover {r.to_takeover:5.2f} s, kill -> finished "
                f"{r.to_finished:5.2f} s ({r.to_finished / args.work:.2f} x the work); "
                f"takeovers {r.takeovers} (and of {r.also or 'nothing else'}), ran twice {r.twice}"
            )
            ok = ok and r.takeovers == 1 and r.twice == 0
        takeover = statistics.median(r.to_takeover for r in mine)
        finished = statistics.median(r.to_finished for r in mine)
        print(f"{kind:12} median: takeover {takeover:.2f} s, finished {finished:.2f} s")
    print("every item finished once" if ok else "AN ITEM RAN TWICE OR WAS NOT TAKEN OVER")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
