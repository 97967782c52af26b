"""The latest heartbeat of every unit, kept current from the heartbeat bucket.

A bucket watch first delivers the last entry of every key, then each update as it is put.
The time that counts is the one the *server* stamped on the entry: a claimant can put any
``at`` it likes in the value, but it cannot choose when the server stored it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import datetime

import msgspec
import structlog
from loopbus.bus import HEARTBEAT_BUCKET, Bus, KvEntry
from loopbus.schemas.reports import decode_heartbeat, heartbeat_key, split_heartbeat_key

CLAIMANT_ROLES = frozenset({"builder", "operator"})

log = structlog.get_logger()


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


class Heartbeats:
    """key ``<project>.<unit>`` -> the server time of its latest heartbeat."""

    def __init__(self, bus: Bus, projects: Sequence[str] = ()):
        self.bus = bus
        self.projects = tuple(projects)
        self.latest: dict[str, datetime] = {}
        self._feeds: list[AsyncIterator[KvEntry | None]] = []
        self._updated = asyncio.Event()

    def of(self, project: str, unit: str) -> datetime | None:
        return self.latest.get(heartbeat_key(project, unit))

    async def load(self) -> None:
        """Read every current heartbeat (each sweep needs them all) and keep the feeds open."""
        bucket = await self.bus.bucket(HEARTBEAT_BUCKET)
        for pattern in [f"{project}.*" for project in self.projects] or [">"]:
            feed = bucket.watch(pattern)
            async for entry in feed:
                if entry is None:
                    break
                self.take(entry)
            self._feeds.append(feed)

    async def follow(self, index: int) -> None:
        """Keep the ``index``-th feed's heartbeats current; returning or raising means the
        feed is dead, and the watchdog must not sweep on a dead feed."""
        async for entry in self._feeds[index]:
            if entry is not None:
                self.take(entry)
        raise RuntimeError("the heartbeat feed ended")

    @property
    def feeds(self) -> int:
        return len(self._feeds)

    async def until(self, predicate: Callable[[], bool], timeout: float) -> None:
        """Wait (at most ``timeout`` s) until ``predicate()`` holds after some update."""
        async with asyncio.timeout(timeout):
            while not predicate():
                self._updated.clear()
                await self._updated.wait()

    def take(self, entry: KvEntry) -> None:
        self._updated.set()
        key = entry.key
        if split_heartbeat_key(key) is None:
            log.warning("heartbeat.bad_key", key=key)
            return
        if entry.deleted:
            self.latest.pop(key, None)
            return
        if not is_heartbeat_for(entry.value, key):
            # Anything else under a unit's key (garbage, another unit's heartbeat, a value
            # put by a role that cannot speak for a unit) must not keep that unit alive.
            log.warning("heartbeat.ignored", key=key)
            return
        if entry.time is not None:
            self.latest[key] = entry.time
