"""The latest heartbeat of every unit, kept current from the heartbeat bucket.

A KV watcher first delivers the last entry of every key, then each update as it is put.
The time that counts is the one the *server* stamped on the entry: a claimant can put any
``at`` it likes in the value, but it cannot choose when the server stored it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime

import msgspec
import structlog
from loopbus.bus import HEARTBEAT_BUCKET, Bus
from loopbus.schemas.reports import decode_heartbeat, heartbeat_key, split_heartbeat_key
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

CLAIMANT_ROLES = frozenset({"builder", "operator"})


def is_heartbeat_for(data: bytes, key: str) -> bool:
    """True when ``data`` is a heartbeat report for the unit the key names, from a claimant."""
    try:
        heartbeat = decode_heartbeat(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return False
    return (
        heartbeat_key(heartbeat.project, heartbeat.unit) == key
        and heartbeat.actor.role in CLAIMANT_ROLES
    )


log = structlog.get_logger()


class Heartbeats:
    """key ``<project>.<unit>`` -> the server time of its latest heartbeat."""

    def __init__(self, bus: Bus, projects: Sequence[str] = ()):
        self.bus = bus
        self.projects = tuple(projects)
        self.latest: dict[str, datetime] = {}
        self._watchers: list[KeyValue.KeyWatcher] = []
        self._tasks: list[asyncio.Task[None]] = []

    def of(self, project: str, unit: str) -> datetime | None:
        return self.latest.get(heartbeat_key(project, unit))

    async def open(self, on_update: Callable[[], Awaitable[None]]) -> None:
        """Load every current heartbeat, then keep following updates in the background."""
        kv = await self.bus.kv(HEARTBEAT_BUCKET)
        patterns = [f"{project}.*" for project in self.projects] or [">"]
        for pattern in patterns:
            watcher = await kv.watch(pattern)
            self._watchers.append(watcher)
            while True:  # the initial values end with a None marker
                entry = await watcher.updates(timeout=30.0)
                if entry is None:
                    break
                self._take(entry)
            self._tasks.append(asyncio.create_task(self._follow(watcher, on_update)))

    async def _follow(
        self, watcher: KeyValue.KeyWatcher, on_update: Callable[[], Awaitable[None]]
    ) -> None:
        async for entry in watcher:
            if entry is not None:
                self._take(entry)
                await on_update()

    def _take(self, entry: KeyValue.Entry) -> None:
        key = entry.key
        if split_heartbeat_key(key) is None:
            log.warning("heartbeat.bad_key", key=key)
            return
        if entry.operation in (KV_DEL, KV_PURGE):
            self.latest.pop(key, None)
            return
        if not is_heartbeat_for(entry.value or b"", key):
            # Anything else under a unit's key (garbage, another unit's heartbeat, a value
            # put by a role that cannot speak for a unit) must not keep that unit alive.
            log.warning("heartbeat.ignored", key=key)
            return
        if isinstance(entry.created, datetime):
            self.latest[key] = entry.created

    def failed(self) -> BaseException | None:
        """Why following stopped, if it did: sweeping on a dead feed would mark live units
        LOST, so the watchdog checks this before every sweep."""
        for task in self._tasks:
            if task.done():
                return task.exception() if not task.cancelled() else RuntimeError("cancelled")
        return None

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for watcher in self._watchers:
            with contextlib.suppress(Exception):
                await watcher.stop()
