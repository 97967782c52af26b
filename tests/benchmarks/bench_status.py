"""``loopbus status`` on a big project: 10,000 units and 100,000 open findings.

    python tests/benchmarks/bench_status.py [--units 10000] [--findings 100000] [--rounds 5]

One embedded server; this process publishes the plan of ``--units`` units (100 per slice)
and ``--findings`` distinct open findings spread over them, then runs the projector daemon
as its own process (as ``loopbus up`` does) until its checkpoint covers the log, and prints:

* how long the projector took to fold and materialise it, and its peak RSS;
* how many values the views hold and the largest one (no value grows with the project);
* the time of ``loopbus status`` (and ``--json``, and ``--unit``) on the big project against
  the same command on a project of one unit with one finding, measured in the same run
  (the baseline: what any status costs), as median of ``--rounds``, both in process
  (reading and rendering, what the command itself does) and as a whole command (a new
  Python process: interpreter start and imports included).

Not collected by pytest (the file name does not start with ``test_``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from bus import EmbeddedServer, Views, connect, ensure_log, free_port
from bus.view_scan import scan
from loopbus.cli import main as loopbus_main
from schemas import Actor, Event, FindingRaised, UnitPlanned, parse_target

SYSTEM = Actor(role="system", principal="bench")
REVIEWER = Actor(role="reviewer", principal="bench")


def big_project(project: str, units: int, findings: int) -> list[Event]:
    events: list[Event] = [
        UnitPlanned(
            project=project, actor=SYSTEM, unit=f"U{i}", slice=f"S{i // 100}", title=f"unit {i}"
        )
        for i in range(units)
    ]
    for i in range(findings):
        unit = i % units
        line = i // units + 1
        events.append(
            FindingRaised(
                project=project,
                actor=REVIEWER,
                producer="reviewer",
                target=parse_target(f"code:src/u{unit}.py:{line}-{line}"),
                severity="medium",
                criterion="C1",
                message="the value may be None here and is dereferenced without a check",
                unit=f"U{unit}",
            )
        )
    return events


async def materialise(url: str, last: int) -> tuple[float, float]:
    """(seconds, peak RSS MiB) of a fresh projector folding the whole log."""
    bus = await connect(url)
    views = await Views.open(bus)
    began = time.perf_counter()
    command = [sys.executable, "-m", "workers.projector", "--nats-url", url]
    child = subprocess.Popen([*command, "--log-level", "warning"], stderr=subprocess.DEVNULL)
    process = psutil.Process(child.pid)
    peak = 0
    try:
        while True:
            peak = max(peak, process.memory_info().rss)
            with contextlib.suppress(Exception):
                if (await views.checkpoint()).seq >= last:
                    break
            await asyncio.sleep(0.2)
        return time.perf_counter() - began, peak / 2**20
    finally:
        child.terminate()
        child.wait()
        await bus.close()


async def value_sizes(url: str, project: str) -> tuple[int, int]:
    """(values, largest value in bytes) of ``project``'s views."""
    bus = await connect(url)
    views = await Views.open(bus)
    count, largest = 0, 0
    async for message in scan(bus, views.bucket.name, f"view.{project}.>"):
        count += 1
        largest = max(largest, len(message.data))
    await bus.close()
    return count, largest


def in_process(args: list[str]) -> float:
    out = io.StringIO()
    began = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = loopbus_main(args)
    elapsed = time.perf_counter() - began
    assert code == 0, out.getvalue()[-500:]
    return elapsed


def as_command(args: list[str]) -> float:
    began = time.perf_counter()
    command = [sys.executable, "-m", "loopbus.cli", *args]
    done = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - began
    assert done.returncode == 0, done.stderr
    return elapsed


def median(runs: int, measure: object, args: list[str]) -> float:
    return statistics.median(measure(args) for _ in range(runs))  # type: ignore[operator]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--units", type=int, default=10_000)
    parser.add_argument("--findings", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = EmbeddedServer(Path(tmp), port=free_port(), auth=None)
        asyncio.run(server.start())
        try:
            run(server.url, args)
        finally:
            server.stop()


def run(url: str, args: argparse.Namespace) -> None:
    async def publish() -> int:
        bus = await connect(url)
        await ensure_log(bus.js)
        events = big_project("big", args.units, args.findings) + big_project("small", 1, 1)
        for start in range(0, len(events), 20_000):
            await bus.publish_many(events[start : start + 20_000])
        last = await bus.stream_last_seq()
        await bus.close()
        return last

    last = asyncio.run(publish())
    seconds, rss = asyncio.run(materialise(url, last))
    values, largest = asyncio.run(value_sizes(url, "big"))
    print(f"project 'big': {args.units} units, {args.findings} open findings ({last} events)")
    print(
        f"projector: folded and materialised in {seconds:.1f} s "
        f"({last / seconds:.0f} events/s), peak RSS {rss:.0f} MiB"
    )
    print(f"views: {values} values, the largest {largest} bytes")
    base = ["--nats-url", url]
    print(f"{'command':58} {'big':>9} {'1 unit':>9} {'ratio':>6}")
    for label, extra in (
        ("status --project P (in process)", []),
        ("status --project P --json (in process)", ["--json"]),
        ("status --project P --unit U0 (in process)", ["--unit", "U0"]),
    ):
        big = median(args.rounds, in_process, ["status", "--project", "big", *extra, *base])
        small = median(args.rounds, in_process, ["status", "--project", "small", *extra, *base])
        print(f"{label:58} {big * 1000:7.0f}ms {small * 1000:7.0f}ms {big / small:6.2f}")
    big = median(args.rounds, as_command, ["status", "--project", "big", *base])
    small = median(args.rounds, as_command, ["status", "--project", "small", *base])
    start = median(args.rounds, as_command, ["--help"])
    label = "loopbus status --project P (a new process)"
    print(f"{label:58} {big * 1000:7.0f}ms {small * 1000:7.0f}ms {big / small:6.2f}")
    print(f"{'loopbus --help (a new process: start and imports only)':58} {start * 1000:7.0f}ms")


if __name__ == "__main__":
    main()
