"""Judging the JetStream cluster from the nodes' monitoring pages: the meta group and the
log's stream, each read on its own leader's page."""

from __future__ import annotations

import time
from dataclasses import dataclass

from . import jsz
from .shell import CheckFailed

LOG_STREAM = "LOOP"  # the stream `loopbus provision` creates (docs/events.md)


@dataclass(frozen=True)
class Health:
    meta_leader: str
    stream_leader: str
    stream_replicas: int
    messages: dict[str, int]  # node -> messages of the log it holds


def survey(monitors: dict[str, str]) -> tuple[Health | None, str]:
    """The cluster as its leaders report it, or None and why it is not healthy yet."""
    pages = {node: jsz.fetch(url) for node, url in monitors.items()}
    down = sorted(node for node, page in pages.items() if page is None)
    if down:
        return None, f"monitoring of {', '.join(down)} does not answer"
    nodes = frozenset(monitors)
    metas = [jsz.meta(page) for page in pages.values() if page]
    meta_leader = next((m.leader for m in metas if m and m.leader), "")
    if meta_leader not in pages:
        return None, "the meta group has no leader"
    meta = jsz.meta(pages[meta_leader] or {})
    why = meta.problem(nodes) if meta else "no meta group"
    if why:
        return None, f"meta group: {why}"
    states = {node: jsz.stream(page or {}, LOG_STREAM) for node, page in pages.items()}
    stream_leader = next((s.group.leader for s in states.values() if s and s.group.leader), "")
    leader_state = states.get(stream_leader)
    if leader_state is None:
        return None, f"stream {LOG_STREAM} has no leader"
    why = leader_state.group.problem(nodes)
    if why:
        return None, f"stream {LOG_STREAM}: {why}"
    return Health(
        meta_leader=meta_leader,
        stream_leader=stream_leader,
        stream_replicas=leader_state.group.size,
        messages={node: s.messages if s else -1 for node, s in states.items()},
    ), ""


def wait_healthy(monitors: dict[str, str], timeout: float) -> tuple[Health, float]:
    """Wait until every node is in the meta group and every replica of the log is current."""
    started = time.monotonic()
    while True:
        health, why = survey(monitors)
        if health:
            return health, time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise CheckFailed(f"cluster not healthy after {timeout:.0f} s: {why}")
        time.sleep(0.2)


def wait_new_leader(monitors: dict[str, str], gone: str, timeout: float) -> tuple[str, float]:
    """Poll the surviving nodes until the log has a leader other than ``gone``."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        for node, url in monitors.items():
            if node == gone:
                continue
            page = jsz.fetch(url, timeout=1)
            state = jsz.stream(page, LOG_STREAM) if page else None
            if state and state.group.leader and state.group.leader != gone:
                return state.group.leader, time.monotonic() - started
        time.sleep(0.1)
    raise CheckFailed(
        f"no new leader for stream {LOG_STREAM} within {timeout:.0f} s of {gone} dying"
    )
