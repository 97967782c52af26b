"""How many frames ``publish_many`` writes at once, measured: several sizes, alternating.

    python tests/benchmarks/bench_publish_writes.py [--chunks 64,512] [--rounds 12]
        [--events 50000] [--hog N] [--hog-apart]

One embedded server; each round publishes ``--events`` findings once per chunk size (the
frames per write, ``bus.publisher.CHUNK``) and once with nats-py's ``publish_async`` with
``Nats-Msg-Id`` (the like-for-like baseline), in that order, every round. Prints for each
the median wall time, this client's CPU and the server's CPU per call, and every round's
wall time, so the spread shows beside the medians. Alternating inside one process keeps
the sizes in the same conditions; a busy machine still moves every figure between
sittings.

Not collected by pytest (the file name does not start with ``test_``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import psutil
from bench_log import cpu_of, findings, raw_publish_async
from busy import busy_loops

import bus.publisher
from bus import EmbeddedServer, connect, ensure_log, free_port
from schemas import encode_event, subject_of


async def measure(args: argparse.Namespace) -> None:
    chunks = [int(c) for c in args.chunks.split(",")]
    runs: dict[str, list[tuple[float, float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        server = EmbeddedServer(Path(tmp), port=free_port(), auth=None)
        await server.start()
        try:
            assert server.process is not None
            served = psutil.Process(server.process.pid)
            client = await connect(server.url)
            await ensure_log(client.js)
            calls = 0
            names = [*(f"{c} frames" for c in chunks), "publish_async + id"]
            for round_number in range(args.rounds):
                # Each round starts one further along, so no size always goes first onto
                # a stream the others have not yet grown.
                shift = round_number % len(names)
                for name in names[shift:] + names[:shift]:
                    calls += 1
                    events = findings(f"w{calls}", args.events)
                    cpu, wall, server_cpu = time.process_time(), time.perf_counter(), cpu_of(served)
                    if name.endswith("frames"):
                        bus.publisher.CHUNK = int(name.split()[0])
                        await client.publish_many(events)
                    else:
                        subjects = [subject_of(e) for e in events]
                        payloads = [encode_event(e) for e in events]
                        await raw_publish_async(client, subjects, payloads, [e.id for e in events])
                    runs.setdefault(name, []).append(
                        (
                            time.perf_counter() - wall,
                            time.process_time() - cpu,
                            cpu_of(served) - server_cpu,
                        )
                    )
            await client.close()
        finally:
            server.stop()
    print(f"{args.events} findings per call, {args.rounds} rounds (medians)")
    for name, figures in runs.items():
        wall, cpu, server_cpu = (statistics.median(f[i] for f in figures) for i in range(3))
        walls = " ".join(f"{f[0]:.2f}" for f in figures)
        print(
            f"{name:20} {args.events / wall:8.0f}/s  wall {wall:.2f} s  client CPU {cpu:.2f} s"
            f"  server CPU {server_cpu:.2f} s  (walls: {walls})"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", default="64,512")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--hog", type=int, default=0, metavar="N")
    parser.add_argument("--hog-apart", action="store_true")
    args = parser.parse_args()
    parts = [c.strip() for c in args.chunks.split(",")]
    if not parts or not all(c.isascii() and c.isdigit() and int(c) > 0 for c in parts):
        parser.error(f"--chunks {args.chunks!r}: give frames per write, as 64,512")
    for name in ("rounds", "events", "hog"):
        least = 0 if name == "hog" else 1
        if getattr(args, name) < least:
            parser.error(f"--{name} {getattr(args, name)}: give a whole number of {least} or more")
    with busy_loops(args.hog, apart=args.hog_apart):
        asyncio.run(measure(args))
    loads = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{args.hog} busy-loop process(es); load average {loads} (1 / 5 / 15 min)")


if __name__ == "__main__":
    main()
