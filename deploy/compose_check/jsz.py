"""What a NATS node says about its JetStream cluster on its monitoring page (``/jsz``).

The parsing is pure (a dict in, a small view out) so it is tested against a real local
cluster without Docker. A node lists its raft peers *other than itself*, and only the
leader's page says truthfully whether a follower is current, so every judgement here is
made on the leader's own page.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

PAGE = "/jsz?accounts=true&streams=true&config=true"


@dataclass(frozen=True)
class Replica:
    name: str
    current: bool
    lag: int


@dataclass(frozen=True)
class Group:
    """One raft group (the meta group, or a stream's) as one node sees it."""

    leader: str
    replicas: tuple[Replica, ...]
    size: int  # members the group is configured for (meta: cluster_size; stream: replicas)

    @property
    def members(self) -> frozenset[str]:
        """Every member named on the leader's page: itself plus the replicas it lists."""
        return frozenset({self.leader, *(r.name for r in self.replicas)})

    @property
    def all_current(self) -> bool:
        return all(r.current for r in self.replicas)

    def problem(self, nodes: frozenset[str]) -> str | None:
        """Why this group, read on its leader's page, is not ``nodes`` all current; or None."""
        if not self.leader:
            return "no leader"
        if self.size != len(nodes):
            return f"configured for {self.size} members, not {len(nodes)}"
        if self.members != nodes:
            return f"members {sorted(self.members)}, not {sorted(nodes)}"
        behind = [f"{r.name} (lag {r.lag})" for r in self.replicas if not r.current]
        return f"not current: {', '.join(behind)}" if behind else None


@dataclass(frozen=True)
class StreamState:
    group: Group
    messages: int
    last_seq: int


def fetch(monitor: str, timeout: float = 2.0) -> dict[str, Any] | None:
    """The /jsz page of the node whose monitoring base URL is ``monitor``; None if it is down."""
    try:
        with urllib.request.urlopen(monitor + PAGE, timeout=timeout) as reply:
            document = json.load(reply)
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def _replicas(cluster: dict[str, Any]) -> tuple[Replica, ...]:
    return tuple(
        Replica(str(r.get("name", "")), bool(r.get("current")), int(r.get("lag") or 0))
        for r in cluster.get("replicas") or []
    )


def meta(document: dict[str, Any]) -> Group | None:
    """The meta group (every JetStream server of the cluster) as this node sees it."""
    cluster = document.get("meta_cluster")
    if not isinstance(cluster, dict):
        return None
    return Group(
        leader=str(cluster.get("leader") or ""),
        replicas=_replicas(cluster),
        size=int(cluster.get("cluster_size") or 0),
    )


def stream(document: dict[str, Any], name: str) -> StreamState | None:
    """Stream ``name`` as this node sees it, or None if the node does not host it."""
    for account in document.get("account_details") or []:
        for detail in account.get("stream_detail") or []:
            if detail.get("name") != name:
                continue
            cluster = detail.get("cluster") or {}
            state = detail.get("state") or {}
            config = detail.get("config") or {}
            return StreamState(
                group=Group(
                    leader=str(cluster.get("leader") or ""),
                    replicas=_replicas(cluster),
                    size=int(config.get("num_replicas") or 0),
                ),
                messages=int(state.get("messages") or 0),
                last_seq=int(state.get("last_seq") or 0),
            )
    return None
