"""The latest heartbeat of every unit *per beater*, kept current from the heartbeat bucket.

A bucket watch first delivers the last entry of every key, then each update as it is put.
The time that counts is the one the *server* stamped on the entry: a claimant can put any
``at`` it likes in the value, but it cannot choose when the server stored it.

Each beat is kept under the actor it names, not as "the unit's" beat: NATS checks who may
write the bucket, never who wrote a key, so the actor is a claim. Which beater counts is
the watchdog's decision against the units projection (only the unit's holder does, see
:mod:`.holders`); keeping them apart also means a stranger's later put under the key does
not erase the holder's last beat from this view.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime
from types import MappingProxyType

import msgspec
import structlog

from bus import HEARTBEAT_BUCKET, Bus, KvEntry
from schemas import Actor
from schemas.reports import decode_heartbeat, heartbeat_key, split_heartbeat_key

log = structlog.get_logger()

_NONE: Mapping[Actor, datetime] = MappingProxyType({})


def beater_of(data: bytes, key: str) -> Actor | None:
    """The actor a heartbeat for the unit the key names says it is from; ``None`` when
    ``data`` is not a heartbeat for that unit (garbage, another unit's beat)."""
    try:
        heartbeat = decode_heartbeat(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    if heartbeat_key(heartbeat.project, heartbeat.unit) != key:
        return None
    return heartbeat.actor


class Heartbeats:
    """key ``<project>.<unit>`` -> beater -> the server time of its latest heartbeat."""

    def __init__(self, bus: Bus, projects: Sequence[str] = ()):
        self.bus = bus
        self.projects = tuple(projects)
        self.latest: dict[str, dict[Actor, datetime]] = {}
        self._feeds: list[AsyncIterator[KvEntry | None]] = []
        self._updated = asyncio.Event()

    def of(self, project: str, unit: str, beater: Actor) -> datetime | None:
        """When ``beater`` last beat for the unit (``None``: never, since it was loaded)."""
        return self.latest.get(heartbeat_key(project, unit), {}).get(beater)

    def beaters(self, project: str, unit: str) -> Mapping[Actor, datetime]:
        """Everyone whose beat for the unit was seen, with the time of their latest."""
        return self.latest.get(heartbeat_key(project, unit), _NONE)

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
        beater = beater_of(entry.value, key)
        if beater is None:
            # Anything else under a unit's key (garbage, another unit's heartbeat) must
            # not keep that unit alive.
            log.warning("heartbeat.ignored", key=key)
            return
        if entry.time is not None:
            self.latest.setdefault(key, {})[beater] = entry.time
