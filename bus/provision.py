"""Idempotent provisioning of the log and the buckets every daemon relies on.

The log is immutable by server configuration, not by convention: DenyDelete and DenyPurge
are set on the stream, so no client (ours or anyone's) can remove or rewrite history.
"""

from __future__ import annotations

import nats.js.errors
from nats.js import JetStreamContext
from nats.js.api import (
    DiscardPolicy,
    KeyValueConfig,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)

from schemas.subjects import ALL as ALL_SUBJECTS

LOG_STREAM = "LOOP"
LOG_SUBJECTS = [ALL_SUBJECTS]

PROJECTION_BUCKET = "loopbus_projections"
"""Materialised projection states (many small values per projection and project, see
bus/views.py) and checkpoints."""
VIEW_HISTORY = 2
"""Revisions the projections bucket keeps per key: a restore takes the one before a flush
that died before its checkpoint (see bus/views.py)."""

HEARTBEAT_BUCKET = "loopbus_heartbeats"
"""Latest heartbeat per unit: liveness, not history, so it never goes on the log."""

WORKER_BUCKET = "loopbus_workers"
"""Per-daemon checkpoints and health beacons."""

BUCKETS = (PROJECTION_BUCKET, HEARTBEAT_BUCKET, WORKER_BUCKET)


def log_config(replicas: int = 1) -> StreamConfig:
    """The LOOP stream: file storage, limits retention with no age limit, no deletes."""
    return StreamConfig(
        name=LOG_STREAM,
        subjects=LOG_SUBJECTS,
        storage=StorageType.FILE,
        retention=RetentionPolicy.LIMITS,
        discard=DiscardPolicy.OLD,
        max_age=0,
        max_msgs=-1,
        max_bytes=-1,
        num_replicas=replicas,
        deny_delete=True,
        deny_purge=True,
        allow_direct=True,
        allow_atomic=True,
        # Two minutes of Msg-Id memory: a retried publish inside it is stored once.
        duplicate_window=120.0,
    )


async def ensure_log(js: JetStreamContext, replicas: int = 1) -> None:
    """Create the log and buckets, or leave them as they are (safe to call every start)."""
    config = log_config(replicas)
    try:
        info = await js.stream_info(LOG_STREAM)
    except nats.js.errors.NotFoundError:
        await js.add_stream(config)
    else:
        await _restore_guarantees(js, info.config)
    for bucket in BUCKETS:
        await _ensure_bucket(js, bucket, replicas)


async def _restore_guarantees(js: JetStreamContext, current: StreamConfig) -> None:
    """An existing LOOP stream made by hand may lack what makes it a log: put it back.

    Only tightening changes are made (deny delete/purge, no age or size limit, the
    subjects); replication is left as it is (changing it is an operator's decision).
    """
    wanted = log_config(current.num_replicas or 1)
    loose = (
        not current.deny_delete
        or not current.deny_purge
        or (current.max_age or 0) != 0
        or (current.max_msgs or -1) != -1
        or (current.max_bytes or -1) != -1
        or ALL_SUBJECTS not in (current.subjects or [])
    )
    if loose:
        wanted.duplicate_window = current.duplicate_window or wanted.duplicate_window
        await js.update_stream(wanted)


async def _ensure_bucket(js: JetStreamContext, bucket: str, replicas: int) -> None:
    history = VIEW_HISTORY if bucket == PROJECTION_BUCKET else 1
    try:
        await js.key_value(bucket)
    except nats.js.errors.BucketNotFoundError:
        await js.create_key_value(
            KeyValueConfig(bucket=bucket, history=history, replicas=replicas, direct=True)
        )
        return
    stream = await js.stream_info(f"KV_{bucket}")
    if (stream.config.max_msgs_per_subject or 1) < history:  # made before views kept two
        stream.config.max_msgs_per_subject = history
        await js.update_stream(stream.config)
