"""The failover run of issue 13 on compose.yaml's cluster (see tests/local_cluster.py).

The projector runs on its own connection throughout (its kernel, as ``python -m
workers.projector`` runs it): it must ride through the leader's death without
stopping, and once the log is complete its view in KV must equal a replay.

Shared by tests/bus/test_cluster.py (a small run) and tests/benchmarks/bench_cluster.py
(100,000 events, with figures).
"""

from __future__ import annotations

import asyncio
import collections
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from local_cluster import LocalCluster
from viewkit import expected_view, materialised

from bus import Ack, Bus, Views, connect, ensure_log, read
from bus.retry import TRANSIENT, Backoff, retrying
from schemas import Actor, Event, FindingRaised, parse_target
from workers.kernel import Kernel
from workers.projector.daemon import ProjectorDaemon

REVIEWER = Actor(role="reviewer", principal="failover")


def findings(count: int) -> list[Event]:
    return [
        FindingRaised(
            project="failover",
            actor=REVIEWER,
            producer="reviewer",
            target=parse_target(f"code:src/m{i % 40}.py:{i % 500 + 1}-{i % 500 + 9}"),
            severity="high",
            criterion=f"C{i % 7}",
            message="the value may be None here and is dereferenced without a check",
            unit=f"U{i % 100}",
        )
        for i in range(count)
    ]


@dataclass
class Failover:
    """What a failover run saw: the counts the guarantee is about, and the timings."""

    published: int
    acked: int = 0
    stored: int = 0
    distinct_stored: int = 0
    lost: int = 0
    stored_twice: int = 0
    acks_match_log: bool = False
    killed: str = ""
    new_leader: str = ""
    publish_s: float = 0.0
    leader_after_s: float = 0.0
    caught_up_after_s: float = 0.0
    projector_stopped: str = ""
    """Why the projector stopped during the run (empty: it never did)."""
    projector_behind_s: float = 0.0
    """From the last publish acked to the projector's checkpoint covering the whole log."""
    view_keys: int = 0
    view_equals_replay: bool = False
    notes: list[str] = field(default_factory=list)


async def provision(bus: Bus) -> None:
    """ensure_log at replication 3, retried while the cluster elects its meta leader."""

    async def attempt() -> None:
        await ensure_log(bus.js, replicas=3)

    await retrying(attempt, "provision the log at R3", Backoff(budget=60.0), transient=TRANSIENT)


async def leader(bus: Bus) -> str | None:
    info = await bus.stream_info()
    return info.cluster.leader if info.cluster else None


async def run_failover(
    store: Path, count: int, kill_at: float = 0.4, chunk: int = 2_000
) -> Failover:
    """Publish ``count`` findings through publish_many on a compose cluster with the log at
    R3, SIGKILL the stream leader once ``kill_at`` of them are stored, keep publishing,
    restart the node, and compare what was acked with what the log holds."""
    cluster = LocalCluster(store, auth=False)  # who publishes is not what it tests
    cluster.start()
    result = Failover(published=count)
    try:
        for name in cluster.nodes:
            await cluster.healthy(name)
        bus = await connect(cluster.url, name="failover-publisher")
        watcher_bus = await connect(cluster.url, name="failover-watcher")
        projector_bus = await connect(cluster.url, name="failover-projector")
        projector = ProjectorDaemon(projector_bus)
        stop = asyncio.Event()
        kernel_task: asyncio.Task[None] | None = None
        try:
            await provision(bus)
            kernel_task = asyncio.create_task(Kernel(projector_bus, projector).run(stop))
            events = findings(count)
            watcher = asyncio.create_task(
                _kill_leader_at(cluster, watcher_bus, count, kill_at, result)
            )
            began = time.monotonic()
            acks: list[Ack] = []
            for start in range(0, count, chunk):
                acks += await bus.publish_many(events[start : start + chunk])
            result.publish_s = time.monotonic() - began
            published_at = time.monotonic()
            await watcher
            restarted = time.monotonic()
            cluster.start(result.killed)
            await _caught_up(bus, result.killed)
            result.caught_up_after_s = time.monotonic() - restarted
            await _compare(bus, events, acks, result)
            await _projected(bus, projector, kernel_task, result)
            result.projector_behind_s = time.monotonic() - published_at
            if not result.projector_stopped:
                result.view_keys, result.view_equals_replay = await _view_check(bus)
        finally:
            stop.set()
            if kernel_task is not None:
                await asyncio.gather(kernel_task, return_exceptions=True)
            await projector_bus.close()
            await watcher_bus.close()
            await bus.close()
    finally:
        cluster.stop()
    return result


async def _kill_leader_at(
    cluster: LocalCluster, bus: Bus, count: int, kill_at: float, result: Failover
) -> None:
    while await bus.stream_last_seq() < kill_at * count:
        await asyncio.sleep(0.01)
    killed = await leader(bus)
    assert killed, "the log has no leader to kill"
    cluster.kill(killed)
    result.killed = killed
    began = time.monotonic()
    while (new := await leader(bus)) in (None, killed):
        await asyncio.sleep(0.05)
    result.new_leader = new
    result.leader_after_s = time.monotonic() - began


async def _caught_up(bus: Bus, name: str) -> None:
    """Until the restarted node is a current replica with nothing left to copy."""
    while True:
        info = await bus.stream_info()
        peers: list[Any] = list(info.cluster.replicas or []) if info.cluster else []
        mine = [p for p in peers if p.name == name]
        if info.cluster and info.cluster.leader == name:
            return  # it even leads again, so it holds everything
        if mine and mine[0].current and not mine[0].offline and not (mine[0].lag or 0):
            return
        await asyncio.sleep(0.1)


async def _compare(bus: Bus, events: list[Event], acks: list[Ack], result: Failover) -> None:
    result.acked = len(acks)
    result.stored = int((await bus.stream_info()).state.messages)
    by_seq: dict[int, str] = {}
    async for record in read(bus, subjects=["loop.failover.>"]):
        assert record.event is not None, record.error
        by_seq[record.seq] = record.event.id
    counts = collections.Counter(by_seq.values())
    published = {e.id for e in events}
    result.distinct_stored = len(counts)
    result.lost = len(published - counts.keys())
    result.stored_twice = sum(n - 1 for n in counts.values())
    result.acks_match_log = all(
        by_seq.get(ack.seq) == event.id for ack, event in zip(acks, events, strict=True)
    )


async def _projected(
    bus: Bus, projector: ProjectorDaemon, task: asyncio.Task[None] | None, result: Failover
) -> None:
    """Until the projector's checkpoint covers the whole log (or it stopped)."""
    last = await bus.stream_last_seq()
    async with asyncio.timeout(600):
        while projector.checkpoint < last:
            if task is not None and task.done():
                error = task.exception() if not task.cancelled() else None
                result.projector_stopped = repr(error) if error else "stopped"
                return
            await asyncio.sleep(0.05)


async def _view_check(bus: Bus) -> tuple[int, bool]:
    """How many values the view has, and whether they equal a replay cut the same way."""
    held = await materialised(await Views.open(bus), "failover")
    return len(held), held == await expected_view(bus, "failover")
