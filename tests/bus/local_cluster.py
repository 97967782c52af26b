"""compose.yaml's three NATS nodes as local processes, and the failover run of issue 13.

The nodes' command lines are read from compose.yaml, so this cluster cannot drift from
the one that is deployed: every flag is kept as written except the addresses (host names
become 127.0.0.1 and free ports) and the store and monitoring paths. Shared by
tests/bus/test_cluster.py (a small run) and tests/benchmarks/bench_cluster.py (100,000
events, with figures).
"""

from __future__ import annotations

import asyncio
import collections
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from loopbus.bus import Ack, Bus, connect, ensure_log, free_port, read, server_binary
from loopbus.bus.retry import TRANSIENT, Backoff, retrying
from loopbus.schemas import Actor, Event, FindingRaised, parse_target

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "compose.yaml"
REVIEWER = Actor(role="reviewer", principal="failover")


def compose_nodes() -> dict[str, list[str]]:
    """name -> command line of every NATS service in compose.yaml."""
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    return {
        name: [str(word) for word in service["command"]]
        for name, service in services.items()
        if str(service.get("image", "")).startswith("nats")
    }


class LocalCluster:
    """The compose NATS nodes as local processes, each startable and killable on its own."""

    def __init__(self, store: Path):
        self.commands = compose_nodes()
        self.client = {name: free_port() for name in self.commands}
        self.route = {name: free_port() for name in self.commands}
        self.http = {name: free_port() for name in self.commands}
        self.store = store
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        return ",".join(f"nats://127.0.0.1:{port}" for port in self.client.values())

    def localise(self, word: str) -> str:
        for name in self.commands:
            word = word.replace(f"nats://{name}:6222", f"nats://127.0.0.1:{self.route[name]}")
        return word

    def node_command(self, name: str) -> list[str]:
        command = self.commands[name]
        assert command[0] == "nats-server", command
        out = [server_binary(), "--addr", "127.0.0.1", "--port", str(self.client[name])]
        for word in command[1:]:
            flag = word.partition("=")[0]
            if flag == "--cluster":
                word = f"--cluster=nats://127.0.0.1:{self.route[name]}"
            elif flag == "--http_port":
                word = f"--http_port={self.http[name]}"
            elif flag == "--store_dir":
                word = f"--store_dir={self.store / name}"
            out.append(self.localise(word))
        return out

    def start(self, *names: str) -> None:
        for name in names or tuple(self.commands):
            with open(self.store / f"{name}.log", "ab") as log:
                self.processes[name] = subprocess.Popen(
                    self.node_command(name),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )

    def kill(self, name: str) -> None:
        """SIGKILL one node: no shutdown, no goodbye to its peers."""
        self.processes[name].send_signal(signal.SIGKILL)
        self.processes[name].wait()

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    async def healthy(self, name: str, timeout: float = 60.0) -> None:
        """Wait until the node says it is healthy (JetStream included)."""
        url = f"http://127.0.0.1:{self.http[name]}/healthz"
        deadline = time.monotonic() + timeout
        while True:
            try:
                with await asyncio.to_thread(urllib.request.urlopen, url, timeout=2) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"node {name} never reported healthy; see {self.store}")
            await asyncio.sleep(0.2)


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
    cluster = LocalCluster(store)
    cluster.start()
    result = Failover(published=count)
    try:
        for name in cluster.commands:
            await cluster.healthy(name)
        bus = await connect(cluster.url, name="failover-publisher")
        watcher_bus = await connect(cluster.url, name="failover-watcher")
        try:
            await provision(bus)
            events = findings(count)
            watcher = asyncio.create_task(
                _kill_leader_at(cluster, watcher_bus, count, kill_at, result)
            )
            began = time.monotonic()
            acks: list[Ack] = []
            for start in range(0, count, chunk):
                acks += await bus.publish_many(events[start : start + chunk])
            result.publish_s = time.monotonic() - began
            await watcher
            restarted = time.monotonic()
            cluster.start(result.killed)
            await _caught_up(bus, result.killed)
            result.caught_up_after_s = time.monotonic() - restarted
            await _compare(bus, events, acks, result)
        finally:
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
