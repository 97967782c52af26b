"""Reading the log back: ``tail`` (follow) and ``replay`` (up to now) as async iterators.

Both run an ordered consumer from a start sequence (or time) with subject filters: it is
ephemeral, needs no acks and delivers in stream order, and on the baseline machine it
reads about four times faster than a pull consumer's ``fetch`` in nats-py.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from nats.js.api import ConsumerConfig, DeliverPolicy

from bus.connection import Bus
from bus.provision import LOG_STREAM
from schemas import Event, InvalidEvent, decode_event

_DEFAULT_FILTER = ("loop.>",)
PENDING_MSGS = 65_536


@dataclass(frozen=True, slots=True)
class Record:
    """One message of the log: its sequence, subject and time, and the decoded event.

    ``event`` is ``None`` when the bytes do not decode; ``error`` then says why and
    ``data`` keeps the original bytes for quarantine.
    """

    seq: int
    subject: str
    time: datetime | None
    event: Event | None
    error: InvalidEvent | None = None
    data: bytes = b""
    pending: int = 0
    """Messages matching the filter still behind this one when it was delivered."""


async def read(
    bus: Bus,
    *,
    subjects: Sequence[str] = _DEFAULT_FILTER,
    start_seq: int = 1,
    start_time: datetime | None = None,
    follow: bool = False,
    until_seq: int | None = None,
    keep_data: bool = False,
) -> AsyncIterator[Record]:
    """Yield records in stream order from ``start_seq`` (or ``start_time``).

    Without ``follow`` it stops at the log's end as it was when reading began (or at
    ``until_seq``); with ``follow`` it waits for new messages until cancelled.
    """
    stop_at = until_seq
    if not follow:
        last = await bus.stream_last_seq()
        stop_at = last if stop_at is None else min(stop_at, last)
        if stop_at < max(start_seq, 1) and start_time is None:
            return
    if start_time is not None:
        config = ConsumerConfig(
            deliver_policy=DeliverPolicy.BY_START_TIME,
            opt_start_time=start_time.isoformat().replace("+00:00", "Z"),
        )
    else:
        config = ConsumerConfig(
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=max(start_seq, 1)
        )
    if len(subjects) == 1:
        config.filter_subject = subjects[0]
    else:
        config.filter_subjects = list(subjects)
    sub = await bus.js.subscribe(
        subjects[0],
        stream=LOG_STREAM,
        ordered_consumer=True,
        config=config,
        pending_msgs_limit=PENDING_MSGS,
        pending_bytes_limit=-1,
    )
    try:
        if not follow:
            # Push delivery starts at once, so "nothing pending" alone may mean "all already
            # delivered to us"; only nothing pending *and* nothing delivered means empty.
            info = await sub.consumer_info()
            if info.num_pending == 0 and not (info.delivered and info.delivered.consumer_seq):
                return
        async for msg in sub.messages:
            meta = msg.metadata
            seq = meta.sequence.stream
            if stop_at is not None and seq > stop_at:
                return
            data = msg.data
            try:
                event: Event | None = decode_event(data)
                error = None
            except InvalidEvent as exc:
                event, error = None, exc
            yield Record(
                seq=seq,
                subject=msg.subject,
                time=meta.timestamp,
                event=event,
                error=error,
                data=data if (keep_data or error is not None) else b"",
                pending=meta.num_pending,
            )
            if not follow and (meta.num_pending == 0 or seq == stop_at):
                return
    finally:
        with contextlib.suppress(Exception):
            await asyncio.shield(sub.unsubscribe())
