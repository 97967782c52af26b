"""Gate throughput with 1, 2 and 4 gate-runner processes splitting one project's asks.

    python tests/benchmarks/bench_gate_scale.py [--asks 16] [--sleep 2] [--runners 1,2,4]

Everything is measured in this one run against one embedded nats-server. The project's
one check only sleeps, so the runners compete for leases and not for the two cores:

* raw: the check's command (``python -c 'time.sleep(S)'``) started directly, once per
  ask, one after another (no loopbus): what one runner could do at best;
* N runners: N ``loopbus worker gate-runner --jobs 1`` processes, each with a key of its
  own, started and caught up; then ``--asks`` gate-run requests (distinct trees, so no
  cached result answers one for another) are published at once, timed until every ask has
  its suite and its lease is released. Throughput is asks per second; the ratio is against
  one runner's, measured in the same run (target: at least 0.9 times N).

For each N it also counts the suites run twice (an ask answered twice, or a check run
twice on one tree: must be 0) and how the asks were split between the runners.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for folder in ("gate_runner", "leases", ""):
    sys.path.insert(0, str(ROOT / "tests" / folder))
# The checkout itself goes first: tests/bus and tests/schemas have no __init__.py, so ahead
# of an editable install (whose finder runs after the path's) they would be taken as the
# namespace packages ``bus`` and ``schemas`` and the imports below would fail.
sys.path.insert(0, str(ROOT))

from gate_repos import GitRepo  # noqa: E402
from logkit import wait_log  # noqa: E402
from replicas import Runner, answered, commits, doubled, runners_used  # noqa: E402

from bus import Bus, EmbeddedServer, connect, ensure_log, free_port  # noqa: E402
from schemas import Actor  # noqa: E402
from schemas.gates import GateRunRequested  # noqa: E402
from workers.runtime import configure_logging  # noqa: E402

ASKER = Actor(role="system", principal="bench")
WAIT_S = 900.0


def raw(asks: int, sleep: float) -> float:
    """The check's command run ``asks`` times in a row, directly: seconds."""
    started = time.perf_counter()
    for _ in range(asks):
        subprocess.run([sys.executable, "-c", f"import time; time.sleep({sleep})"], check=True)
    return time.perf_counter() - started


async def one_size(
    bus: Bus, url: str, workdir: Path, count: int, asks: int, sleep: float
) -> tuple[float, dict[str, int], list[int]]:
    """Seconds to answer ``asks`` asks with ``count`` runners; what ran twice; the split."""
    project = f"scale{count}x{int(time.time())}"
    home = workdir / project
    home.mkdir()
    repo = GitRepo(home / "repo")
    shas = commits(repo, project, asks, sleep)
    runners = [Runner(f"r{n}", repo.path, url, home) for n in range(count)]
    try:
        for runner in runners:
            runner.start()
        while not all(r.ready() for r in runners):
            for runner in runners:
                if runner.process is not None and runner.process.poll() is not None:
                    raise SystemExit(f"runner {runner.name} exited:\n{runner.tail()}")
            await asyncio.sleep(0.1)
        requests = [GateRunRequested(project=project, actor=ASKER, commit=sha) for sha in shas]
        started = time.perf_counter()
        for request in requests:
            await bus.publish(request)
        ids = {r.id for r in requests}
        events = await wait_log(bus, project, lambda es: answered(es, ids), WAIT_S)
        elapsed = time.perf_counter() - started
    finally:
        for runner in runners:
            runner.stop()
    split = sorted(runners_used(events).values(), reverse=True)
    return elapsed, doubled(events), split


async def main(asks: int, sleep: float, sizes: list[int]) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bench-gate-scale-"))
    server = EmbeddedServer(workdir / "nats", port=free_port(), auth=None)
    await server.start()
    bus = await connect(server.url, name="bench")
    try:
        await ensure_log(bus.js)
        baseline = raw(asks, sleep)
        print(f"asks {asks}, each check sleeping {sleep} s; cores here: 2 shared")
        print(f"raw: {asks} sleeps one after another {baseline:.2f} s ({asks / baseline:.3f}/s)")
        one: float | None = None
        twice = 0
        for count in sizes:
            elapsed, doubles, split = await one_size(bus, server.url, workdir, count, asks, sleep)
            throughput = asks / elapsed
            one = one or throughput
            ratio = throughput / one
            twice += sum(n - 1 for n in doubles.values())
            print(
                f"{count} runner(s): {elapsed:.2f} s, {throughput:.3f} asks/s, "
                f"{ratio:.2f}x one runner (target >= {0.9 * count:.1f}), "
                f"vs raw {throughput / (asks / baseline):.2f}x; split {split}; "
                f"run twice: {sum(n - 1 for n in doubles.values())}"
            )
        print(f"suites or checks run twice, all sizes: {twice}")
    finally:
        await bus.close()
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--asks", type=int, default=16)
    parser.add_argument("--sleep", type=float, default=2.0)
    parser.add_argument("--runners", default="1,2,4")
    options = parser.parse_args()
    configure_logging("warning")
    asyncio.run(main(options.asks, options.sleep, [int(n) for n in options.runners.split(",")]))
