"""The stack run scaled: every replica healthy on its own beacon, each gate runner with a
key of its own, and a project held by one replica of a daemon that shares projects.

compose-check runs ``up --scale`` with :data:`SCALE`. A daemon's healthcheck says
``loopbus health NAME --here``, so a replica is judged on its own beacon; here each
replica is asked again, and the hosts they name must all differ (a replica answering for
its sibling would repeat a host). Gate runners keep their signing key on an anonymous
volume, one per container: the runner ids their keys stand for must all differ too.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from .findings import Client, read_log
from .shell import CheckFailed, run
from .stack import Stack

SCALE = {"gate-runner": 3, "builder": 3, "standards": 2}
"""Replicas per scaled service: the issue's gate runners and builders, and two replicas
of a daemon that acts per project (``standards`` acts with no repository)."""

SHARING = "standards"
KEY_DIR = "/home/loopbus/.loopbus"  # the gate runner's --data-dir in compose.yaml
HEALTHY = re.compile(r"healthy \(pid (\d+) on (\S+), seq (\d+)\)")
RUNNER_ID = (
    "from pathlib import Path; from workers.gates.signing import load_existing; "
    f"s = load_existing(Path({KEY_DIR!r})); print(s.runner if s else '-')"
)


@dataclass(frozen=True)
class Holding:
    holder: str
    takings: int
    handovers: int


def healthy_hosts(stack: Stack, client: Client, service: str) -> list[str]:
    """The host each replica of ``service`` reports healthy from, asked in that replica."""
    hosts = []
    for index in range(1, stack.replicas(service) + 1):
        argv = stack.exec(service, index=index)
        done = run(client.container(argv, "reader", "health", service, "--here"), timeout=120)
        found = HEALTHY.search(done.stdout)
        if found is None:
            raise CheckFailed(f"{service} replica {index} said: {done.stdout.strip()!r}")
        hosts.append(found.group(2))
    if len(set(hosts)) != len(hosts):
        raise CheckFailed(f"{service} replicas share a beacon: hosts {hosts}")
    return hosts


def runner_ids(stack: Stack, service: str = "gate-runner") -> list[str]:
    """The runner id of each gate-runner replica's own key; all must differ."""
    ids = []
    for index in range(1, stack.replicas(service) + 1):
        argv = stack.exec(service, "python", "-P", "-c", RUNNER_ID, index=index)
        ids.append(run(argv, timeout=120).stdout.strip())
    if "-" in ids or len(set(ids)) != len(ids):
        raise CheckFailed(f"gate runners must each have a key of their own; runner ids: {ids}")
    return ids


def holding(events: list[dict[str, Any]], daemon: str) -> Holding | None:
    """Who holds the project for ``daemon`` now, by the last project-lease event."""
    current: str | None = None
    takings = handovers = 0
    for event in events:
        if event.get("work") != "project" or event.get("item") != daemon:
            continue
        if event.get("kind") == "lease.taken.v1":
            takings += 1
            current = str(event["holder"])
        elif event.get("kind") == "lease.released.v1":
            handovers += 1
            current = None
    return Holding(current, takings, handovers) if current is not None else None


def shared_project(client: Client, timeout: float) -> Holding:
    """Wait until one replica of :data:`SHARING` holds the check's project."""
    deadline = time.monotonic() + timeout
    while True:
        held = holding(read_log(client), SHARING)
        if held is not None:
            return held
        if time.monotonic() > deadline:
            raise CheckFailed(f"no {SHARING} replica took project {client.project} in {timeout} s")
        time.sleep(1.0)
