"""Key-value buckets behind loopbus's own types: heartbeats, health beacons, views, caches.

A :class:`Bucket` owns one JetStream KV bucket and offers the few verbs loopbus uses; it
hands out :class:`KvEntry` values and raises :mod:`bus.errors`, never nats-py's
own types, so no package above ``bus`` needs to know which client library is underneath.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime

import nats.errors
import nats.js.errors
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from bus.errors import BusError, KeyChanged

WATCH_INITIAL_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class KvEntry:
    """One value of a key: its bytes, its revision, when the *server* stored it (a writer
    cannot choose that), and whether it is a deletion marker."""

    key: str
    value: bytes
    revision: int
    time: datetime | None
    deleted: bool = False


def _entry(raw: KeyValue.Entry) -> KvEntry:
    created: object = raw.created  # nats-py types it as int; it holds the server's datetime
    return KvEntry(
        key=raw.key,
        value=bytes(raw.value or b""),
        revision=int(raw.revision or 0),
        time=created if isinstance(created, datetime) else None,
        deleted=raw.operation in (KV_DEL, KV_PURGE),
    )


async def _next(watcher: KeyValue.KeyWatcher) -> KeyValue.Entry | None:
    """The next initial value of a watch, ``None`` once they are all delivered."""
    entry: KeyValue.Entry | None = await watcher.updates(  # type: ignore[no-untyped-call]
        timeout=WATCH_INITIAL_TIMEOUT_S
    )
    return entry


async def _stop(watcher: KeyValue.KeyWatcher) -> None:
    await watcher.stop()  # type: ignore[no-untyped-call]


class Bucket:
    """One KV bucket. Create with :meth:`bus.Bus.bucket`."""

    def __init__(self, name: str, kv: KeyValue, check: Callable[[str], None] | None = None) -> None:
        self.name = name
        self._kv = kv
        # Raises PermissionDenied for a write the connection's credential may not make.
        self._check = check or (lambda _subject: None)

    def _may_write(self, key: str) -> None:
        self._check(f"$KV.{self.name}.{key}")

    async def get(self, key: str) -> KvEntry | None:
        """The key's latest value; ``None`` when it was never set or is deleted."""
        try:
            raw = await self._kv.get(key)
        except nats.js.errors.KeyNotFoundError:  # deleted or purged keys raise this too
            return None
        except (TimeoutError, nats.errors.Error) as exc:
            raise BusError(f"reading {self.name}/{key} failed: {exc!r}") from exc
        return _entry(raw)

    async def put(self, key: str, value: bytes) -> int:
        """Store ``value`` under ``key``; returns the new revision."""
        self._may_write(key)
        try:
            return int(await self._kv.put(key, value))
        except (TimeoutError, nats.errors.Error) as exc:
            raise BusError(f"writing {self.name}/{key} failed: {exc!r}") from exc

    async def create(self, key: str, value: bytes) -> int:
        """Store ``value`` only if ``key`` holds nothing (:class:`KeyChanged` otherwise)."""
        self._may_write(key)
        try:
            return int(await self._kv.create(key, value))
        except nats.js.errors.KeyWrongLastSequenceError as exc:
            raise KeyChanged(self.name, key) from exc
        except nats.js.errors.KeyNotFoundError as exc:
            # nats-py answers a lost create race by reading the key back; on a cluster that
            # read may reach a replica the winner's write has not reached yet. The key
            # exists all the same: the race was lost, as above (seen on R3 under load).
            raise KeyChanged(self.name, key) from exc
        except (TimeoutError, nats.errors.Error) as exc:
            raise BusError(f"writing {self.name}/{key} failed: {exc!r}") from exc

    async def update(self, key: str, value: bytes, revision: int) -> int:
        """Store ``value`` only if ``key`` is still at ``revision`` (:class:`KeyChanged`)."""
        self._may_write(key)
        try:
            return int(await self._kv.update(key, value, last=revision))
        except nats.js.errors.KeyWrongLastSequenceError as exc:
            raise KeyChanged(self.name, key) from exc
        except (TimeoutError, nats.errors.Error) as exc:
            raise BusError(f"writing {self.name}/{key} failed: {exc!r}") from exc

    async def keys(self, pattern: str = ">") -> list[str]:
        """Every key holding a value (deleted keys excluded) that matches ``pattern``."""
        try:
            watcher = await self._kv.watch(pattern, ignore_deletes=True, meta_only=True)
            found: list[str] = []
            try:
                while (raw := await _next(watcher)) is not None:
                    if raw.operation not in (KV_DEL, KV_PURGE):
                        found.append(raw.key)
            finally:
                await _stop(watcher)
        except (TimeoutError, nats.errors.Error) as exc:
            raise BusError(f"listing {self.name}/{pattern} failed: {exc!r}") from exc
        return found

    async def delete(self, key: str) -> None:
        self._may_write(key)
        try:
            await self._kv.delete(key)
        except (TimeoutError, nats.errors.Error) as exc:
            raise BusError(f"deleting {self.name}/{key} failed: {exc!r}") from exc

    async def watch(self, pattern: str = ">") -> AsyncIterator[KvEntry | None]:
        """Every current value matching ``pattern``, then ``None`` (the initial values are
        done), then each update as it is stored, for ever."""
        try:
            watcher = await self._kv.watch(pattern)
        except (TimeoutError, nats.errors.Error) as exc:
            raise BusError(f"watching {self.name}/{pattern} failed: {exc!r}") from exc
        try:
            while True:  # the initial values end with a None marker
                try:
                    raw = await _next(watcher)
                except (TimeoutError, nats.errors.Error) as exc:
                    raise BusError(f"watching {self.name}/{pattern} failed: {exc!r}") from exc
                if raw is None:
                    break
                yield _entry(raw)
            yield None
            async for raw in watcher:
                if raw is not None:
                    yield _entry(raw)
        finally:
            # The connection may be going away; then there is nothing left to stop.
            with contextlib.suppress(TimeoutError, nats.errors.Error):
                await _stop(watcher)
