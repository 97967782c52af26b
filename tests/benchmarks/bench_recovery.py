"""How long after a server restart a following reader delivers the next message.

    python tests/benchmarks/bench_recovery.py [--rounds 5]

For each round: a fresh embedded nats-server, a reader following the log (``bus.read``
with ``follow=True``, as every daemon does), ten events it has delivered; then the server
is stopped and started again on the same port and store, one event is published (the
publish itself rides through the restart), and the time from "server accepting
connections again" to "the reader delivered that event" is measured. Run twice: as
loopbus does now (the reader re-creates its consumer when the client reconnects) and
with the reconnection signal ignored, which leaves the silence rule alone (what every
reader did before: wait ``reader.SILENCE_S`` = 15 s of silence). Medians over the rounds.

Not collected by pytest; tests/bus/test_recovery.py asserts the behaviour.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bus import Bus, EmbeddedServer, connect, ensure_log, free_port, read, reader
from schemas import Actor, Event, FindingRaised, parse_target

REVIEWER = Actor(role="reviewer", principal="bench")


def finding(i: int) -> Event:
    return FindingRaised(
        project="rec",
        actor=REVIEWER,
        producer="reviewer",
        target=parse_target(f"code:a.py:{i + 1}-{i + 1}"),
        severity="low",
        message="m",
    )


async def one_round(directory: Path) -> tuple[float, float]:
    """(server up -> publish acked, server up -> reader delivered), in seconds."""
    server = EmbeddedServer(directory, port=free_port(), auth=None)
    await server.start()
    bus: Bus = await connect(server.url, name="bench-recovery")
    delivered: dict[str, float] = {}
    arrived = asyncio.Event()

    async def follow() -> None:
        async for record in read(bus, subjects=["loop.rec.>"], follow=True):
            if record.event is not None:
                delivered[record.event.id] = time.monotonic()
                arrived.set()

    try:
        await ensure_log(bus.js)
        await bus.publish_many([finding(i) for i in range(10)])
        follower = asyncio.create_task(follow())
        while len(delivered) < 10:
            arrived.clear()
            await asyncio.wait_for(arrived.wait(), 30)
        server.stop()
        await server.start()
        up = time.monotonic()
        after = finding(10)
        await bus.publish(after)
        acked = time.monotonic()
        while after.id not in delivered:
            arrived.clear()
            await asyncio.wait_for(arrived.wait(), 120)
        follower.cancel()
        return acked - up, delivered[after.id] - up
    finally:
        await bus.close()
        server.stop()


async def measure(rounds: int, use_reconnect: bool) -> tuple[float, float]:
    original = reader._Puller.on_reconnect
    if not use_reconnect:
        reader._Puller.on_reconnect = lambda self: None  # type: ignore[method-assign]
    try:
        results = []
        for _ in range(rounds):
            with tempfile.TemporaryDirectory() as tmp:
                results.append(await one_round(Path(tmp)))
    finally:
        reader._Puller.on_reconnect = original  # type: ignore[method-assign]
    return statistics.median(r[0] for r in results), statistics.median(r[1] for r in results)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(
        f"server restart -> next message delivered by a following reader, median of {args.rounds}"
    )
    print(f"{'reader':44} {'publish acked':>14} {'delivered':>10}")
    for label, use in (
        ("re-creates its consumer on reconnection", True),
        ("silence rule only (before)", False),
    ):
        acked, seen = await measure(args.rounds, use)
        print(f"{label:44} {acked:13.2f}s {seen:9.2f}s")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
