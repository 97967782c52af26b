"""What `loopbus up --sync always` costs: publishing with an fsync before every ack.

    python tests/benchmarks/bench_sync.py [--events 20000] [--sequential 2000] [--rounds 3]

Two embedded nats-servers side by side, one as ``loopbus up`` starts it by default
(``--sync interval``: nats-server syncs every two minutes) and one with ``--sync always``
(``sync_interval: always``). In each round, on each server: ``Bus.publish_many`` of
``--events`` findings (pipelined) and ``--sequential`` findings with ``Bus.publish`` one
after another (each waits for its ack, as a daemon's single facts do). Rounds alternate
between the servers; medians, and the always/interval ratio from the same run.

Not collected by pytest. The disk matters more than the CPU here: figures from a tmpfs
or a disk that lies about fsync say nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bus import Bus, EmbeddedServer, connect, ensure_log, free_port
from schemas import Actor, Event, FindingRaised, parse_target

REVIEWER = Actor(role="reviewer", principal="bench")


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
        )
        for i in range(count)
    ]


async def pipelined(bus: Bus, events: list[Event]) -> float:
    start = time.perf_counter()
    await bus.publish_many(events)
    return len(events) / (time.perf_counter() - start)


async def sequential(bus: Bus, events: list[Event]) -> float:
    start = time.perf_counter()
    for event in events:
        await bus.publish(event)
    return len(events) / (time.perf_counter() - start)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--sequential", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        servers = {
            mode: EmbeddedServer(
                Path(tmp) / mode, port=free_port(), auth=None, sync_always=mode == "always"
            )
            for mode in ("interval", "always")
        }
        buses: dict[str, Bus] = {}
        try:
            for mode, server in servers.items():
                await server.start()
                buses[mode] = await connect(server.url, name=f"bench-sync-{mode}")
                await ensure_log(buses[mode].js)
            rates: dict[tuple[str, str], list[float]] = {}
            for round_no in range(args.rounds):
                for mode, bus in buses.items():
                    many = findings(f"p{round_no}", args.events)
                    one = findings(f"s{round_no}", args.sequential)
                    rates.setdefault((mode, "many"), []).append(await pipelined(bus, many))
                    rates.setdefault((mode, "one"), []).append(await sequential(bus, one))
        finally:
            for bus in buses.values():
                await bus.close()
            for server in servers.values():
                server.stop()
    median = {key: statistics.median(values) for key, values in rates.items()}
    print(f"stores under {tempfile.gettempdir()}, median of {args.rounds} rounds")
    print(f"{'path':40} {'interval':>10} {'always':>10} {'ratio':>7}")
    for path, label in (
        ("many", "publish_many (pipelined)"),
        ("one", "publish, one after another"),
    ):
        interval, always = median[("interval", path)], median[("always", path)]
        print(f"{label:40} {interval:10.0f} {always:10.0f} {always / interval:7.2f}")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
