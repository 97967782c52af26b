"""How live is ``status``: publish ack -> the projector's view visible in KV, at steady rates.

    python tests/benchmarks/bench_live.py [--rates 1000,5000] [--seconds 10]
        [--projector-path DIR] [--hog N] [--hog-apart] [--distinct] [--no-raw]
        [--projector-session own|shared]

One embedded server, the projector daemon as its own process (as ``loopbus up`` runs it),
and this process publishing a steady stream of findings and unit transitions about 100
units (``publish_many`` in small batches every 2 ms). For every event it records when its
publish was acknowledged, when a plain consumer of the log received it (the raw baseline:
an ordered push consumer, nothing folded) and when the projector's view of the project in
KV first showed a sequence at or past it (a KV watch on the view's key; the value names
the sequence it was folded through). Prints p50/p90/p99/max of both latencies per rate,
and the CPU the projector process spent per second of the run (user + system), so today's
projector and a changed one can be compared with the same script.

The view is looked for under both layouts: ``<project>.units`` (one value per projection,
before issue 13) and ``view.<project>.units`` (the partitioned layout's summary).

``--projector-path DIR`` runs the projector process with ``DIR`` first on its
``PYTHONPATH`` (a ``loopbus`` package laid out from another commit, say main's), so an
older projector is measured by the same script, on the same machine, in the same way.

``--hog N`` starts N CPU-bound processes (a busy loop each) for the whole run, so the
figures are those of a machine busy with other work, as a developer's laptop or a CI runner
is; the load average is printed with each rate. After publishing ends, the view's lag (how
many acknowledged events it had not folded yet) and the time it took to catch up are
printed too, and so is the most it was behind at any moment of the run (sampled every
100 ms: acknowledged events with a sequence past the one the view last showed) — the lag
bound over the run, not only at its end. The rate the publisher really achieved is printed
beside the target, with "target reached" or "TARGET MISSED" (below 98 % of it).

The projector runs in a session of its own, as the supervisor of ``loopbus up`` starts
it. With the kernel's autogroup scheduling that decides whom it shares the CPU with (see
``busy.py``): ``--projector-session shared`` keeps it in this script's session, where it
competes with this process and with the busy loops (how this script ran it before
2026-12-07); ``--hog-apart`` puts each busy loop in a session of its own. The scheduling
group of each process is printed at the start.

``--distinct`` makes every finding a new one (its own line of its unit's file, so its own
(target, severity, criterion) key: the project's open findings grow by one per finding
event, 30,000 after 60 s at 1,000 events/s) instead of ``--lines`` lines per unit raised
again and again.

``--no-raw`` leaves the raw consumer out: at 5,000 events/s beside a busy loop on two
cores it is this process's own work that falls behind (it receives every event), and it
takes CPU the projector and the server then do not get; without it only the view is timed.

Not collected by pytest (the file name does not start with ``test_``).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from busy import busy_loops, scheduling_group

from bus import PROJECTION_BUCKET, Bus, EmbeddedServer, connect, ensure_log, free_port
from schemas import (
    Actor,
    Event,
    FindingRaised,
    UnitPlanned,
    UnitTransitioned,
    parse_target,
)

REVIEWER = Actor(role="reviewer", principal="bench")
SYSTEM = Actor(role="system", principal="bench")
UNITS = [f"U{i}" for i in range(100)]
TICK_S = 0.002
_SEQ = re.compile(rb'"seq":(\d+)')


def event(project: str, i: int, lines: int) -> Event:
    """Odd: a unit transition; even: a finding on one of ``lines`` lines of the unit's file
    (so the project holds about ``100 * lines`` open findings once they have all come up);
    ``lines == 0``: every finding on a line of its own (each one a new open finding)."""
    if i % 2:
        unit = UNITS[i % len(UNITS)]
        return UnitTransitioned(project=project, actor=SYSTEM, unit=unit, state="working")
    j = i // 2
    unit, line = UNITS[j % len(UNITS)], j // len(UNITS) + 1
    if lines:
        line = (line - 1) % lines + 1
    return FindingRaised(
        project=project,
        actor=REVIEWER,
        producer="reviewer",
        target=parse_target(f"code:src/{unit}.py:{line}-{line + 1}"),
        severity="medium",
        criterion="C1",
        message="the value may be None here",
        unit=unit,
    )


class Seen:
    """When each stream sequence was acked, received raw, and first visible in the view."""

    def __init__(self) -> None:
        self.acked: dict[int, float] = {}
        self.received: dict[int, float] = {}
        self.view: list[tuple[int, float]] = []  # (seq folded through, when seen)
        self.order: list[int] = []  # acked sequences, in the order acked (ascending)
        self.folded = 0  # the highest sequence the view has shown
        self.max_lag = 0  # the most acked events the view had not shown, sampled

    def lag(self) -> int:
        """Acknowledged events past the sequence the view last showed."""
        return len(self.order) - bisect.bisect_right(self.order, self.folded)

    def view_latencies(self) -> list[float]:
        out = []
        marks = sorted(self.view)
        index = 0
        for seq in sorted(self.acked):
            while index < len(marks) and marks[index][0] < seq:
                index += 1
            if index == len(marks):
                break
            out.append(marks[index][1] - self.acked[seq])
        return out

    def raw_latencies(self) -> list[float]:
        return [self.received[s] - t for s, t in self.acked.items() if s in self.received]


async def raw_consumer(bus: Bus, project: str, seen: Seen) -> None:
    sub = await bus.js.subscribe(f"loop.{project}.>", ordered_consumer=True)
    try:
        async for msg in sub.messages:
            seen.received[msg.metadata.sequence.stream] = time.perf_counter()
    finally:
        await sub.unsubscribe()


async def view_watcher(bus: Bus, project: str, seen: Seen) -> None:
    kv = await bus.js.key_value(PROJECTION_BUCKET)
    keys = [f"{project}.units", f"view.{project}.units"]
    watchers = [await kv.watch(key) for key in keys]

    async def follow(watcher: object) -> None:
        async for entry in watcher:  # type: ignore[attr-defined]
            if entry is not None and entry.value:
                match = _SEQ.search(entry.value[:4096])
                if match:
                    seq = int(match.group(1))
                    seen.view.append((seq, time.perf_counter()))
                    seen.folded = max(seen.folded, seq)

    await asyncio.gather(*(follow(w) for w in watchers))


async def lag_sampler(seen: Seen) -> None:
    while True:
        await asyncio.sleep(0.1)
        seen.max_lag = max(seen.max_lag, seen.lag())


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


async def one_rate(
    bus: Bus, projector: psutil.Process, rate: int, seconds: float, lines: int, raw: bool
) -> None:
    project = f"live{rate}"
    await bus.publish_many(
        [UnitPlanned(project=project, actor=SYSTEM, unit=u, slice="S1") for u in UNITS]
    )
    seen = Seen()
    tasks = [
        asyncio.create_task(view_watcher(bus, project, seen)),
        asyncio.create_task(lag_sampler(seen)),
    ]
    if raw:
        tasks.append(asyncio.create_task(raw_consumer(bus, project, seen)))
    await asyncio.sleep(1.0)  # both watchers are in place
    total = int(rate * seconds)
    cpu_before, began = cpu_seconds(projector), time.perf_counter()
    sent, tick = 0, 0
    while sent < total:
        tick += 1
        count = min(int(rate * TICK_S * tick) - sent, total - sent)
        if count > 0:
            acks = await bus.publish_many([event(project, sent + i, lines) for i in range(count)])
            now = time.perf_counter()
            for ack in acks:
                seen.acked[ack.seq] = now
                seen.order.append(ack.seq)
            sent += count
        # Paced on the wall clock: a late tick is caught up by the next ones.
        await asyncio.sleep(max(began + tick * TICK_S - time.perf_counter(), 0.0))
    elapsed = time.perf_counter() - began
    last = max(seen.acked)
    behind = seen.lag()  # acked, not yet in the view
    seen.max_lag = max(seen.max_lag, behind)
    ended = time.perf_counter()
    deadline = time.perf_counter() + 60
    while (not seen.view or max(s for s, _ in seen.view) < last) and time.perf_counter() < deadline:
        await asyncio.sleep(0.05)
    caught_up = time.perf_counter() - ended
    cpu = cpu_seconds(projector) - cpu_before
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    achieved = sent / elapsed
    verdict = "target reached" if achieved >= 0.98 * rate else "TARGET MISSED"
    loads = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"rate {rate} events/s: published {sent} in {elapsed:.1f} s ({achieved:.0f}/s, "
        f"{verdict}); load average {loads} (1 / 5 / 15 min)"
    )
    print(
        f"  view lag: at most {seen.max_lag} events behind during the run; "
        f"{behind} when publishing ended; caught up in {caught_up:.2f} s"
    )
    for name, values in (
        ("raw consumer", seen.raw_latencies()),
        ("view in KV", seen.view_latencies()),
    ):
        print(f"  {name:13} {summary(values)}")
    print(
        f"  view updates seen: {len(seen.view)}; "
        f"this process's CPU {time.process_time():.1f} s so far"
    )
    print(
        f"  projector CPU: {cpu:.2f} s over {elapsed:.1f} s of publishing "
        f"({cpu / elapsed:.2f} cores)"
    )


def summary(values: list[float]) -> str:
    if not values:
        return "no samples"
    ordered = sorted(values)

    def pct(p: float) -> float:
        return ordered[min(int(p * len(ordered)), len(ordered) - 1)] * 1000

    return (
        f"n={len(values)} p50 {pct(0.5):7.1f} ms  p90 {pct(0.9):7.1f} ms  "
        f"p99 {pct(0.99):7.1f} ms  max {ordered[-1] * 1000:7.1f} ms  "
        f"mean {statistics.fmean(values) * 1000:6.1f} ms"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rates", default="1000,5000")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument(
        "--lines", type=int, default=20, help="finding lines per unit (open findings / 100)"
    )
    parser.add_argument(
        "--distinct", action="store_true", help="every finding a new one (ignores --lines)"
    )
    parser.add_argument(
        "--projector-path", help="put DIR first on the projector process's PYTHONPATH"
    )
    parser.add_argument(
        "--hog", type=int, default=0, metavar="N", help="run N busy-loop processes meanwhile"
    )
    parser.add_argument(
        "--no-raw", action="store_true", help="no raw consumer (time only the view)"
    )
    parser.add_argument(
        "--hog-apart", action="store_true", help="each busy loop in a session of its own"
    )
    parser.add_argument(
        "--projector-session",
        choices=("own", "shared"),
        default="own",
        help="own: the projector in a session of its own, as `loopbus up` starts it; "
        "shared: in this process's session (and a busy loop's, unless --hog-apart)",
    )
    args = parser.parse_args()
    if args.distinct:
        args.lines = 0
    print(
        f"{os.cpu_count()} cores; {args.hog} busy-loop process(es); {args.seconds:.0f} s per "
        f"rate; findings {'distinct' if args.distinct else f'on {args.lines} lines per unit'}; "
        f"projector from {args.projector_path or 'this checkout'}"
        f"{'; no raw consumer' if args.no_raw else ''}; projector session {args.projector_session}"
        f"{'; busy loops in sessions of their own' if args.hog_apart else ''}"
    )
    with busy_loops(args.hog, apart=args.hog_apart) as hogs:
        await measure(args, hogs)


async def measure(args: argparse.Namespace, hogs: list[int]) -> None:
    env = dict(os.environ)
    if args.projector_path:
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [args.projector_path, env.get("PYTHONPATH")])
        )
    with tempfile.TemporaryDirectory() as tmp:
        server = EmbeddedServer(Path(tmp), port=free_port(), auth=None)
        await server.start()
        child = None
        try:
            bus = await connect(server.url)
            await ensure_log(bus.js)
            child = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "workers.projector",
                    "--nats-url",
                    server.url,
                    "--log-level",
                    "warning",
                ],
                stderr=subprocess.DEVNULL,
                env=env,
                cwd=tmp,  # ``-m`` puts the working directory first on sys.path
                # As the supervisor starts it; with autogroup scheduling this decides whom
                # the projector shares its CPU with (see busy.py).
                start_new_session=args.projector_session == "own",
            )
            projector = psutil.Process(child.pid)
            assert server.process is not None
            print(
                f"scheduling groups: this process {scheduling_group(os.getpid())}, "
                f"projector {scheduling_group(child.pid)}, "
                f"server {scheduling_group(server.process.pid)}, "
                f"busy loops {', '.join(scheduling_group(pid) for pid in hogs) or 'none'}"
            )
            await asyncio.sleep(2.0)  # started and following
            for rate in (int(r) for r in args.rates.split(",")):
                await one_rate(bus, projector, rate, args.seconds, args.lines, not args.no_raw)
            await bus.close()
        finally:
            if child is not None:
                child.terminate()
                child.wait()
            server.stop()


if __name__ == "__main__":
    asyncio.run(main())
