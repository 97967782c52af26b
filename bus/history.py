"""History cannot vanish quietly: who may create the log, and when nobody may.

A daemon that finds no log used to create one, so a deleted log came back empty and every
fold started again from nothing, looking healthy. Now a log is created only by the admin
credential (``loopbus up`` or ``loopbus provision``), and never when there is evidence that
one existed: a checkpoint or a view in the buckets, or the first sequence ``up`` recorded
in its data directory. A daemon that finds the log gone stops with one line saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import nats.js.errors

from bus.errors import BusError, LogNotProvisioned
from bus.private import write_private
from bus.provision import (
    LOG_STREAM,
    PROJECTION_BUCKET,
    WORKER_BUCKET,
    ensure_log,
)

if TYPE_CHECKING:
    from bus.connection import Bus

RECORD_FILE = "log.json"
"""In ``up``'s data directory: the log it provisioned (stream creation time, first seq)."""


class HistoryMissing(BusError):
    """Raised instead of creating a log when history evidently existed."""

    def __init__(self, url: str, evidence: str):
        super().__init__(
            f"the log (stream {LOG_STREAM}) at {url} is gone, but history existed ({evidence}); "
            "refusing to create an empty one: restore the stream, or an admin re-provisions "
            "it deliberately (`loopbus provision --adopt`)"
        )
        self.evidence = evidence


class HistoryUnreadable(BusError):
    """Raised instead of creating a log when the buckets that would say whether history
    existed could not be read: not knowing is no evidence that there was none."""

    def __init__(self, url: str, reason: str):
        super().__init__(
            f"the log (stream {LOG_STREAM}) at {url} is gone, and whether history existed "
            f"could not be read ({reason}); refusing to create an empty one: start again once "
            "the server answers"
        )
        self.reason = reason


class EvidenceUnreadable(Exception):
    """A bucket that may hold evidence of history did not answer."""


class StreamNotAtStart(BusError):
    """Raised by provisioning when the log does not start at sequence 1."""

    def __init__(self, url: str, first_seq: int):
        super().__init__(
            f"the log (stream {LOG_STREAM}) at {url} starts at sequence {first_seq}, not 1: "
            "messages before it were removed; pass --adopt to accept it as it is"
        )
        self.first_seq = first_seq


def record(data_dir: Path, created: str, first_seq: int) -> None:
    """Remember in ``data_dir`` that a log was provisioned there."""
    path = data_dir / RECORD_FILE
    if path.exists():
        return  # the first record is the one that proves history began
    write_private(
        path, json.dumps({"stream": LOG_STREAM, "created": created, "first_seq": first_seq})
    )


def recorded(data_dir: Path | None) -> str | None:
    """The evidence ``data_dir`` holds of an earlier log, in words; ``None`` if none."""
    if data_dir is None:
        return None
    path = data_dir / RECORD_FILE
    try:
        body = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return f"{path} records it, created {body.get('created')}"


READ_ATTEMPTS = 3
"""Tries at reading one bucket's keys before it counts as unreadable (1 s, then 2 s apart)."""


async def bucket_evidence(js: nats.js.JetStreamContext) -> str | None:
    """A checkpoint, view or beacon in the buckets means daemons folded a log here.

    Raises :class:`EvidenceUnreadable` when a bucket does not answer after
    :data:`READ_ATTEMPTS` tries: a busy server's timeout once counted as "no evidence", and
    a daemon then created an empty log where history had existed."""
    for bucket in (PROJECTION_BUCKET, WORKER_BUCKET):
        keys = await _keys(js, bucket)
        if keys:
            return f"bucket {bucket} holds {len(keys)} key(s), e.g. {sorted(keys)[0]!r}"
    return None


async def _keys(js: nats.js.JetStreamContext, bucket: str) -> list[str]:
    """The bucket's keys; none when it does not exist or is empty."""
    for attempt in range(1, READ_ATTEMPTS + 1):
        try:
            kv = await js.key_value(bucket)
            return list(await kv.keys())
        except (nats.js.errors.BucketNotFoundError, nats.js.errors.NoKeysError):
            return []
        except (TimeoutError, nats.errors.Error) as exc:
            if attempt == READ_ATTEMPTS:
                raise EvidenceUnreadable(f"bucket {bucket}: {type(exc).__name__}") from exc
            await asyncio.sleep(attempt)
    return []


async def evidence(js: nats.js.JetStreamContext, data_dir: Path | None) -> str | None:
    return recorded(data_dir) or await bucket_evidence(js)


async def require_log(
    js: nats.js.JetStreamContext,
    url: str,
    *,
    data_dir: Path | None = None,
    may_create: bool = True,
) -> None:
    """Make sure the log exists; create it only when allowed and nothing says it existed.

    Raises :class:`HistoryMissing` when the log is gone but history evidently existed, and
    :class:`LogNotProvisioned` when it never existed and this caller may not create it.
    """
    try:
        await js.stream_info(LOG_STREAM)
        return
    except nats.js.errors.NotFoundError:
        pass
    try:
        found = await evidence(js, data_dir)
    except EvidenceUnreadable as exc:
        raise HistoryUnreadable(url, str(exc)) from exc
    if found is not None:
        raise HistoryMissing(url, found)
    if not may_create:
        raise LogNotProvisioned(url)
    await ensure_log(js)


def data_dir_from_env() -> Path | None:
    """The data directory ``loopbus up`` gave its daemons (``LOOPBUS_DATA_DIR``)."""
    with contextlib.suppress(KeyError):
        return Path(os.environ["LOOPBUS_DATA_DIR"])
    return None


async def check_history(bus: Bus, adopt: bool) -> None:
    """Refuse a log that lost its beginning, or vanished while the buckets remember it."""
    try:
        info = await bus.js.stream_info(LOG_STREAM)
    except nats.js.errors.NotFoundError:
        if adopt:
            return
        try:
            found = await bucket_evidence(bus.js)
        except EvidenceUnreadable as exc:
            raise HistoryUnreadable(bus.url, str(exc)) from exc
        if found is not None:
            raise HistoryMissing(bus.url, found) from None
        return
    first = int(info.state.first_seq or 0)
    if first > 1 and not adopt:
        raise StreamNotAtStart(bus.url, first)
