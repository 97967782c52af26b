"""Benchmark the log: loopbus publish and replay against raw nats-py, in one run, one server.

    python tests/benchmarks/bench_log.py [--events 50000] [--rounds 3] [--memory-events 1000000]
        [--hog N] [--hog-apart]

Prints, for each path, the median events/s over ``--rounds``, the ratio against its raw
baseline measured in the same run, and the CPU seconds this (client) process spent on it
(wall-clock ratios shrink when the machine's cores are busy with other work; CPU does not):

* publish: ``Bus.publish_many`` of findings vs nats-py ``publish_async`` of the same bytes
  (both pipelined; the baseline without ``Nats-Msg-Id``, which ``publish_many`` sets, and
  again with it, so the server de-duplicates for both), and the core-NATS ceiling (core
  publish onto the stream subject without ``Nats-Msg-Id``, timed until the stream has
  stored every message): where the ceiling is below 2.5x the baseline, no client reaches
  2.5x it;
* replay: ``loopbus.read`` + every fold vs a raw ordered consumer + msgspec decode;
* memory: the projector daemon's peak RSS folding ``--memory-events`` events about 100
  units, next to its peak RSS folding a tenth of that (bounded means about the same).

``--hog N`` starts N CPU-bound processes (a busy loop each) for the whole run, so the
figures are those of a machine busy with other work; the load average is printed at the end.
They run in this script's session (its scheduling group: they take their CPU from this
client, not from the server, which runs in a session of its own), or with ``--hog-apart``
each in a session of its own, as unrelated work would (see ``busy.py``). The server's CPU
for each publish figure is printed too.
With ``PYTHONPATH=DIR`` first, the ``bus`` of another commit laid out in ``DIR`` is the one
measured (this script imports nothing newer than ``publish_many``).

Not collected by pytest (the file name does not start with ``test_``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable
from importlib import metadata
from pathlib import Path

import msgspec
import psutil
from busy import busy_loops
from nats.js.api import ConsumerConfig, DeliverPolicy

from bus import (
    LOG_STREAM,
    Bus,
    EmbeddedServer,
    Views,
    connect,
    ensure_log,
    free_port,
    read,
)
from projections import apply_all, initial_states
from schemas import (
    Actor,
    Event,
    FindingRaised,
    UnitPlanned,
    UnitTransitioned,
    encode_event,
    parse_target,
    project_subjects,
    subject_of,
)

REVIEWER = Actor(role="reviewer", principal="bench")
SYSTEM = Actor(role="system", principal="bench")
_decoder = msgspec.json.Decoder(Event)


def findings(project: str, count: int) -> list[Event]:
    return [
        FindingRaised(
            project=project,
            actor=REVIEWER,
            producer="reviewer",
            target=parse_target(f"code:src/module_{i % 40}.py:{i % 500 + 1}-{i % 500 + 9}"),
            severity="high",
            criterion=f"C{i % 7}",
            message="the value may be None here and is dereferenced without a check",
            unit=f"U{i % 100}",
            evidence={"rule": "none-check", "round": str(i % 5)},
        )
        for i in range(count)
    ]


async def raw_publish_async(
    bus: Bus, subjects: list[str], payloads: list[bytes], ids: list[str] | None = None
) -> float:
    """nats-py ``publish_async`` of every payload; with ``ids``, each with its
    ``Nats-Msg-Id`` as ``publish_many`` sends it (the server then de-duplicates: more work
    for it per message)."""
    start = time.perf_counter()
    if ids is None:
        for subject, payload in zip(subjects, payloads, strict=True):
            await bus.js.publish_async(subject, payload)
    else:
        for subject, payload, msg_id in zip(subjects, payloads, ids, strict=True):
            await bus.js.publish_async(subject, payload, headers={"Nats-Msg-Id": msg_id})
    await bus.js.publish_async_completed()
    return time.perf_counter() - start


async def core_ceiling(bus: Bus, subject: str, payloads: list[bytes]) -> float:
    before = (await bus.js.stream_info(LOG_STREAM)).state.last_seq
    target = before + len(payloads)
    start = time.perf_counter()
    for payload in payloads:
        await bus.nc.publish(subject, payload)
    await bus.nc.flush()
    while (await bus.js.stream_info(LOG_STREAM)).state.last_seq < target:
        await asyncio.sleep(0.001)
    return time.perf_counter() - start


async def raw_ordered_read(bus: Bus, subject: str, count: int) -> float:
    start = time.perf_counter()
    config = ConsumerConfig(deliver_policy=DeliverPolicy.ALL, filter_subject=subject)
    sub = await bus.js.subscribe(
        subject,
        ordered_consumer=True,
        config=config,
        pending_msgs_limit=65_536,
        pending_bytes_limit=-1,
    )
    seen = 0
    async for msg in sub.messages:
        _decoder.decode(msg.data)
        seen += 1
        if seen == count:
            break
    elapsed = time.perf_counter() - start
    await sub.unsubscribe()
    return elapsed


async def loopbus_replay(bus: Bus, project: str, count: int) -> float:
    start = time.perf_counter()
    states = initial_states()
    seen = 0
    async for record in read(bus, subjects=[project_subjects(project)]):
        if record.event is not None:
            apply_all(states, record.event)
        seen += 1
    assert seen == count, (seen, count)
    return time.perf_counter() - start


def rate(count: int, seconds: list[float]) -> float:
    return count / statistics.median(seconds)


def cpu_of(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


async def timed(
    work: Awaitable[float | None], server: psutil.Process
) -> tuple[float, float, float]:
    """(wall seconds, this process's CPU seconds, the server's CPU seconds) of ``work``
    (which may time itself)."""
    cpu, wall, served = time.process_time(), time.perf_counter(), cpu_of(server)
    reported = await work
    return (
        reported if reported is not None else time.perf_counter() - wall,
        time.process_time() - cpu,
        cpu_of(server) - served,
    )


async def throughput(bus: Bus, count: int, rounds: int, server: psutil.Process) -> None:
    timings: dict[str, list[tuple[float, float, float]]] = {
        k: [] for k in ("loopbus", "raw", "rawid", "core", "replay", "rawreplay")
    }
    for round_no in range(rounds):
        mine = findings(f"benchL{round_no}", count)
        raw_events = findings(f"benchR{round_no}", count)
        raw_subjects = [subject_of(e) for e in raw_events]
        raw_payloads = [encode_event(e) for e in raw_events]
        id_events = findings(f"benchI{round_no}", count)
        id_subjects = [subject_of(e) for e in id_events]
        id_payloads = [encode_event(e) for e in id_events]
        id_ids = [e.id for e in id_events]
        core_payloads = [encode_event(e) for e in findings(f"benchC{round_no}", count)]
        core_subject = f"loop.benchC{round_no}.finding.reviewer"

        async def publish_mine(events: list[Event] = mine) -> None:
            await bus.publish_many(events)

        timings["loopbus"].append(await timed(publish_mine(), server))
        timings["raw"].append(
            await timed(raw_publish_async(bus, raw_subjects, raw_payloads), server)
        )
        timings["rawid"].append(
            await timed(raw_publish_async(bus, id_subjects, id_payloads, id_ids), server)
        )
        timings["core"].append(await timed(core_ceiling(bus, core_subject, core_payloads), server))
        timings["replay"].append(
            await timed(loopbus_replay(bus, f"benchL{round_no}", count), server)
        )
        timings["rawreplay"].append(
            await timed(raw_ordered_read(bus, f"loop.benchR{round_no}.>", count), server)
        )
    rates = {k: rate(count, [w for w, _, _ in v]) for k, v in timings.items()}
    cpu = {k: statistics.median(c for _, c, _ in v) for k, v in timings.items()}
    served = {k: statistics.median(s for _, _, s in v) for k, v in timings.items()}
    pub, raw, core, rawid = rates["loopbus"], rates["raw"], rates["core"], rates["rawid"]
    rep, rawrep = rates["replay"], rates["rawreplay"]
    print(f"events per figure: {count}, rounds: {rounds} (median)")
    print(f"{'path':58} {'events/s':>10} {'ratio':>7} {'client CPU':>11}")
    print(f"{'core publish onto the stream subject, until stored (ceiling)':58} {core:10.0f}")
    print(f"{'raw nats-py publish_async (baseline)':58} {raw:10.0f} {1.0:7.2f} {cpu['raw']:10.2f}s")
    print(
        f"{'raw nats-py publish_async with Nats-Msg-Id':58} {rawid:10.0f} {rawid / raw:7.2f}"
        f" {cpu['rawid']:10.2f}s"
    )
    print(
        f"{'loopbus Bus.publish_many (Nats-Msg-Id, pipelined)':58} {pub:10.0f} {pub / raw:7.2f}"
        f" {cpu['loopbus']:10.2f}s"
    )
    print(f"ceiling / raw {core / raw:.2f}; publish_many / raw with Nats-Msg-Id {pub / rawid:.2f}")
    print(
        "server CPU per figure (median): "
        + ", ".join(f"{k} {served[k]:.2f}s" for k in ("raw", "rawid", "loopbus", "core"))
    )
    print(
        f"{'raw ordered consumer + msgspec decode (baseline)':58} {rawrep:10.0f} {1.0:7.2f}"
        f" {cpu['rawreplay']:10.2f}s"
    )
    print(
        f"{'loopbus read + every fold (replay)':58} {rep:10.0f} {rep / rawrep:7.2f}"
        f" {cpu['replay']:10.2f}s"
    )


def unit_history(project: str, count: int, offset: int = 0) -> list[Event]:
    """``count`` events about 100 units (the plan first): transitions and findings whose
    keys repeat. ``offset`` continues a history made in chunks."""
    units = [f"U{i}" for i in range(100)]
    events: list[Event] = []
    if offset == 0:
        events = [UnitPlanned(project=project, actor=SYSTEM, unit=u, slice="S1") for u in units]
    for i in range(offset, offset + count - len(events)):
        unit = units[i % 100]
        if i % 2:
            events.append(
                UnitTransitioned(
                    project=project, actor=SYSTEM, unit=unit, state="working", ready=bool(i % 3)
                )
            )
        else:
            events.append(
                FindingRaised(
                    project=project,
                    actor=REVIEWER,
                    producer="reviewer",
                    target=parse_target(f"code:src/u{i % 100}.py:{i % 20 + 1}-{i % 20 + 2}"),
                    severity="medium",
                    criterion="C1",
                    message="repeated finding",
                    unit=unit,
                )
            )
    return events


async def projector_peak_rss(count: int) -> tuple[float, float]:
    """(peak RSS in MiB, seconds) of a fresh projector folding ``count`` events."""
    with tempfile.TemporaryDirectory() as tmp:
        server = EmbeddedServer(Path(tmp), port=free_port(), auth=None)
        await server.start()
        try:
            bus = await connect(server.url)
            await ensure_log(bus.js)
            for start in range(0, count, 50_000):
                await bus.publish_many(unit_history("mem", min(50_000, count - start), start))
            last = await bus.stream_last_seq()
            views = await Views.open(bus)
            began = time.perf_counter()
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
            )
            # Sampled rather than taken from wait4's ru_maxrss: a forked child's maximum
            # includes the parent's pages from before exec, which measures the benchmark.
            process = psutil.Process(child.pid)
            peak = 0
            while True:
                peak = max(peak, process.memory_info().rss)
                try:
                    if (await views.checkpoint()).seq >= last:
                        break
                except Exception:
                    pass
                await asyncio.sleep(0.1)
            elapsed = time.perf_counter() - began
            child.terminate()
            child.wait()
            await bus.close()
        finally:
            server.stop()
    return peak / 2**20, elapsed


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memory-events", type=int, default=1_000_000)
    parser.add_argument(
        "--hog", type=int, default=0, metavar="N", help="run N busy-loop processes meanwhile"
    )
    parser.add_argument(
        "--hog-apart", action="store_true", help="each busy loop in a session of its own"
    )
    args = parser.parse_args()
    with busy_loops(args.hog, apart=args.hog_apart):
        await measure(args)
    loads = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    where = "sessions of their own" if args.hog_apart else "this session"
    print(f"{args.hog} busy-loop process(es) in {where}; load average {loads} (1 / 5 / 15 min)")


async def measure(args: argparse.Namespace) -> None:
    print(
        f"nats-py {metadata.version('nats-py')}, msgspec {msgspec.__version__}, "
        f"python {sys.version.split()[0]}, {os.cpu_count()} cores"
    )
    with tempfile.TemporaryDirectory() as tmp:
        server = EmbeddedServer(Path(tmp), port=free_port(), auth=None)
        await server.start()
        try:
            bus = await connect(server.url)
            await ensure_log(bus.js)
            assert server.process is not None
            await throughput(bus, args.events, args.rounds, psutil.Process(server.process.pid))
            await bus.close()
        finally:
            server.stop()
    if args.memory_events:
        small = max(args.memory_events // 10, 1000)
        small_rss, small_s = await projector_peak_rss(small)
        big_rss, big_s = await projector_peak_rss(args.memory_events)
        print(
            f"projector peak RSS folding {small:>9} events about 100 units: "
            f"{small_rss:7.1f} MiB ({small / small_s:.0f} events/s)"
        )
        print(
            f"projector peak RSS folding {args.memory_events:>9} events about 100 units: "
            f"{big_rss:7.1f} MiB ({args.memory_events / big_s:.0f} events/s)"
        )
        print(f"RSS ratio (10x the events): {big_rss / small_rss:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
