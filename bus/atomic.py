"""Appending events all or none: the JetStream atomic batch behind ``Bus.publish_atomic``.

Every event carries its ``Nats-Msg-Id``, the batch id and its position; the last one
commits the batch and is the only one answered. The server stages the batch and stores
all of it, contiguously, or none of it (a batch with one event already on the log is
refused whole).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

import nats.errors
from nats.js.api import Header

from bus.errors import BatchRefused, ServerUnavailable
from bus.publisher import ACK_WAIT, Ack, encode_checked
from bus.retry import retrying
from schemas import Event, subject_of

if TYPE_CHECKING:
    from bus.connection import Bus

ATOMIC_BATCH_LIMIT = 1000
"""The server's default cap on one atomic batch."""


async def publish_atomic(bus: Bus, events: Sequence[Event]) -> list[Ack]:
    """All of ``events`` or none, as one JetStream atomic batch (see ``Bus.publish_atomic``).

    A batch nobody received ("no responders": a restart, a leader election) is sent again
    within the back-off budget; an unanswered commit is not, since it may have applied.
    """
    if len(events) > ATOMIC_BATCH_LIMIT:
        raise BatchRefused(f"{len(events)} events exceed the {ATOMIC_BATCH_LIMIT} limit")
    for event in events:
        bus.check_publish(subject_of(event))
    payloads = [encode_checked(e) for e in events]
    batch_id = events[0].id  # unique, and ties the batch to its first event
    last = len(events)

    async def attempt() -> bytes:
        for position, event in enumerate(events, start=1):
            headers: dict[str, str] = {
                Header.MSG_ID: event.id,
                Header.BATCH_ID: batch_id,
                Header.BATCH_SEQUENCE: str(position),
            }
            if position < last:
                await bus.nc.publish(subject_of(event), payloads[position - 1], headers=headers)
                continue
            headers[Header.BATCH_COMMIT] = "1"
            reply = await bus.nc.request(
                subject_of(event), payloads[-1], timeout=ACK_WAIT, headers=headers
            )
            return bytes(reply.data or b"")
        raise AssertionError("unreachable")  # pragma: no cover

    try:
        data = await retrying(
            attempt,
            f"atomic batch to {subject_of(events[-1])}",
            bus.backoff,
            transient=(nats.errors.NoRespondersError,),
        )
    except nats.errors.TimeoutError as exc:
        raise BatchRefused(f"no answer to the commit: {exc!r}") from exc
    except ServerUnavailable as exc:
        raise BatchRefused(str(exc)) from exc
    body = json.loads(data) if data else {}
    if "error" in body:
        err = body["error"]
        raise BatchRefused(f"{err.get('description')} (err_code={err.get('err_code')})")
    first_seq = int(body["seq"]) - last + 1
    return [Ack(first_seq + i) for i in range(last)]
