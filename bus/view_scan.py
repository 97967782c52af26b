"""Reading many KV values at once: a scan of the bucket's stream with our own pull consumer.

A KV bucket is a stream (``KV_<bucket>``) whose subjects are ``$KV.<bucket>.<key>``. nats-py's
``keys()`` and ``watch()`` push every value through a task per message; reading a view of
100,000 entries that way takes many seconds. A scan drives an ephemeral pull consumer the
way :mod:`bus.reader` reads the log — batches, one callback — either over the
latest value of each key (a reader: ``status``) or over every revision the bucket keeps
(the projector's restore, which needs the revision before a flush that did not finish).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from bus.connection import Bus
from bus.reader import _delete, _position, _Puller

DELETED = ("DEL", "PURGE")


@dataclass(frozen=True, slots=True)
class KvMessage:
    """One stored revision of a key: its bytes, and whether it is a deletion marker."""

    key: str
    data: bytes
    deleted: bool


async def scan(
    bus: Bus, bucket: str, pattern: str, *, history: bool = False, limit: int | None = None
) -> AsyncIterator[KvMessage]:
    """Values of the keys matching ``pattern`` (NATS wildcards), in stream order: the latest
    of each key, or with ``history`` every revision the bucket keeps. Stops after
    ``limit`` messages when given."""
    stream, prefix = f"KV_{bucket}", f"$KV.{bucket}."
    config = ConsumerConfig(
        deliver_policy=DeliverPolicy.ALL if history else DeliverPolicy.LAST_PER_SUBJECT,
        ack_policy=AckPolicy.NONE,
        filter_subject=prefix + pattern,
        mem_storage=True,
        num_replicas=1,
        inactive_threshold=60.0,
        max_waiting=4,
        headers_only=False,
    )
    batch = max(1, min(limit, 2_000)) if limit is not None else 2_000
    puller = _Puller(bus, config, follow=False, stream=stream, batch=batch)
    if await puller.create() == 0:
        await _delete(bus, puller.consumer, stream)
        return
    sub = await bus.nc.subscribe(puller.inbox, cb=puller.on_message, pending_msgs_limit=0)
    stop_listening = bus.reconnects.listen(puller.on_reconnect)
    seen = 0
    try:
        while limit is None or seen < limit:
            msg = await puller.next()
            seq, _time, pending = _position(msg)
            if seq <= puller.last_seq:
                continue  # delivered again after a recovery
            puller.last_seq = seq
            seen += 1
            operation = (msg.headers or {}).get("KV-Operation")
            yield KvMessage(msg.subject[len(prefix) :], bytes(msg.data), operation in DELETED)
            if pending == 0:
                return
    finally:
        stop_listening()
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
        await _delete(bus, puller.consumer, stream)
