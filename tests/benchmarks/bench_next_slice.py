"""The loop's own time from a slice closing to the next slice's first dispatch, with an
instant planner.

    python tests/benchmarks/bench_next_slice.py [--slices 10]

An embedded server, a real repository, the planner and dispatcher daemons in process, and
the scripted planner (``python -m loopbus.scripted.planner``, run through the agent runner
like any planner: sandboxed, in a read-only copy of trunk). A charter is started (its
approval and a criteria check on trunk's head are published as the charter daemon would);
each time the next slice's first unit is dispatched, the slice is closed (a
``slice.closed.v1`` published as the dispatcher would) and the criteria are checked again on
the same head. Measured from the log: ``slice.closed`` → the next ``unit.dispatched``: the
planner's decision, its sandboxed run, the plan check, the proposal and submission, the
dispatcher's acceptance and first dispatch. Not included: the criteria check itself (the
charter daemon's, which waits for the merger's trunk run).

The raw baseline, measured in the same run on the same server: the scripted planner run
bare (a subprocess given the same plans file and a brief on stdin, no sandbox, no copy of
trunk) plus one JetStream publish acknowledged. The ratio is the loop's median over that:
what the planner daemon, the sandbox, the plan check and the dispatcher add to the least a
next slice could cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

from bus import Bus, EmbeddedServer, connect, ensure_log, free_port, read
from schemas import Actor, project_subjects
from schemas.charter import Charter, CharterApproved, CharterCriterion, RunCriteriaChecked
from schemas.slices import BootResult, SliceClosed, UnitDispatched, UsageReport
from workers.agents.config import RepoConfig, parse
from workers.dispatcher.daemon import Dispatcher
from workers.dispatcher.repo import ProjectRepo
from workers.kernel import Kernel
from workers.planner.daemon import Planner

PROJECT = "bench"
SYSTEM = Actor(role="system", principal="bench")


def make_repo(path: Path, plans: Path) -> str:
    toml = (
        f'[project]\nid = "{PROJECT}"\n\n[[check]]\nid = "tests"\ncommand = "true"\n'
        f'\n[plan]\ncommand = "{sys.executable} -m loopbus.scripted.planner {plans}"\n'
        f'\n[agents]\nread_only = ["{plans.parent}"]\n'
    )
    repo = Repo.init(str(path), mkdir=True)
    blob = Blob.from_string(toml.encode())
    tree = Tree()
    tree.add(b"loopbus.toml", 0o100644, blob.id)
    commit = Commit()
    commit.tree, commit.parents = tree.id, []
    commit.author = commit.committer = b"bench <bench@example.com>"
    commit.commit_time = commit.author_time = 1_700_000_000
    commit.commit_timezone = commit.author_timezone = 0
    commit.message = b"base"
    for obj in (blob, tree, commit):
        repo.object_store.add_object(obj)
    repo.refs[b"refs/heads/main"] = commit.id
    (path / "loopbus.toml").write_text(toml)
    return commit.id.decode()


async def baseline(bus: Bus, plans: Path, rounds: int = 7) -> tuple[float, float]:
    """(median bare planner run, median publish ack) in seconds."""
    brief = json.dumps({"slice": "S1", "attempt": 1}).encode()
    runs: list[float] = []
    for _ in range(rounds):
        started = time.perf_counter()
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "loopbus.scripted.planner", str(plans),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, _ = await process.communicate(brief)
        runs.append(time.perf_counter() - started)
        assert process.returncode == 0 and b"S1" in out, out
    acks: list[float] = []
    for _ in range(rounds * 3):
        event = UsageReport(project="baseline", actor=SYSTEM, unit="u", tokens_in=1)
        started = time.perf_counter()
        await bus.publish(event)
        acks.append(time.perf_counter() - started)
    return statistics.median(runs), statistics.median(acks)


async def run(slices: int, timeout: float) -> tuple[list[float], tuple[float, float]]:
    work = Path(tempfile.mkdtemp(prefix="bench-next-slice-"))
    work.chmod(0o755)
    plans = work / "plans" / "plans.json"
    plans.parent.mkdir()
    plans.write_text(
        json.dumps(
            {
                f"S{k}": f'[slice]\nid = "S{k}"\n\n[[unit]]\nid = "U{k}"\nfiles = ["m{k}.py"]\n'
                for k in range(1, slices + 2)
            }
        )
    )
    head = make_repo(work / "repo", plans)
    config = parse((work / "repo" / "loopbus.toml").read_text(), repo=str(work / "repo"))
    server = EmbeddedServer(work / "nats", port=free_port(), auth=None)
    await server.start()
    try:
        bus = await connect(server.url, name="bench")
        await ensure_log(bus.js)
        raw = await baseline(bus, plans)
        return await _measure(bus, config, work / "repo", head, slices, timeout), raw
    finally:
        server.stop()


async def _measure(
    bus: Bus, config: RepoConfig, repo: Path, head: str, slices: int, timeout: float
) -> list[float]:
    # The synthetic closes leave each slice's unit working: room for all of them.
    dispatcher = Dispatcher(
        bus,
        projects=[PROJECT],
        repos={PROJECT: ProjectRepo(repo, trunk="main")},
        capacity=slices + 2,
    )
    planner = Planner({PROJECT: config}, poll_s=0.1)
    kernels = [Kernel(bus, dispatcher), Kernel(bus, planner)]
    stop = asyncio.Event()
    tasks = [asyncio.create_task(k.run(stop)) for k in kernels]
    charter = Charter(
        id="C1", title="bench", criteria=(CharterCriterion(id="c", text="c", check="tests"),),
        autonomy="full",
    )  # fmt: skip
    approved = CharterApproved(project=PROJECT, actor=SYSTEM, charter=charter)
    await bus.publish(approved)

    async def check() -> None:
        await bus.publish(
            RunCriteriaChecked(
                project=PROJECT, actor=SYSTEM, run=approved.id, charter="C1", trunk=head,
                failing=("c",),
            )
        )  # fmt: skip

    await check()
    gaps: list[float] = []
    closed_at: datetime | None = None
    try:
        async with asyncio.timeout(timeout):
            reader = read(bus, subjects=[project_subjects(PROJECT)], follow=True)
            async for record in reader:
                event = record.event
                if isinstance(event, UnitDispatched):
                    if closed_at is not None:
                        gaps.append((event.at - closed_at).total_seconds())
                    if len(gaps) == slices:
                        break
                    closed = SliceClosed(
                        project=PROJECT, actor=SYSTEM, slice=event.slice,
                        boot=BootResult(outcome="pass"),
                    )  # fmt: skip
                    closed_at = closed.at
                    await bus.publish(closed)
                    await check()
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        await bus.close()
    return gaps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slices", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    gaps, (planner_s, ack_s) = asyncio.run(run(args.slices, args.timeout))
    median = statistics.median(gaps)
    raw = planner_s + ack_s
    print(f"slice.closed -> next unit.dispatched over {len(gaps)} slices:")
    print(f"  median {median:.3f} s, max {max(gaps):.3f} s, min {min(gaps):.3f} s")
    print(
        f"raw baseline: the planner run bare {planner_s:.3f} s + one publish acked "
        f"{ack_s * 1000:.1f} ms = {raw:.3f} s"
    )
    print(f"ratio (loop median / raw baseline): {median / raw:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
