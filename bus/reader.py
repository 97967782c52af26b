"""Reading the log back: ``tail`` (follow) and ``replay`` (up to now) as async iterators.

Both use an ephemeral pull consumer (no acks, in-memory, filtered by subject) that we feed
with our own batch requests, keeping at most two batches in flight:

* memory is bounded by the batch size, however long the log and however slow the reader
  (an ordered *push* consumer let the server run ahead into nats-py's queue: folding a
  million events took over a gigabyte; with a capped queue nats-py silently drops);
* every message arrives through one callback into a buffer, so there is no task, future
  or ``wait_for`` per message (what makes nats-py's own ``fetch`` slow).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from bus.cancel import raise_if_cancelled
from bus.connection import Bus
from bus.provision import LOG_STREAM
from bus.retry import note, retrying
from schemas import Event, InvalidEvent, decode_event, subject_of
from schemas.limits import bounded
from schemas.subjects import ALL as ALL_SUBJECTS

_DEFAULT_FILTER = (ALL_SUBJECTS,)
BATCH = 2_000
"""Messages per pull request; at most two requests are outstanding."""
EXPIRES_S = 5.0
"""How long one pull request waits on the server when there is nothing new (follow)."""
SILENCE_S = 3 * EXPIRES_S
"""No message, heartbeat or expiry for this long means the consumer is gone (see _Puller)."""


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


def _consumer_config(
    subjects: Sequence[str], start_seq: int, start_time: datetime | None
) -> ConsumerConfig:
    if start_time is not None:
        config = ConsumerConfig(
            deliver_policy=DeliverPolicy.BY_START_TIME,
            # nats-py sends this field as given; the server wants RFC 3339 text.
            opt_start_time=start_time.astimezone(UTC).isoformat().replace("+00:00", "Z"),  # type: ignore[arg-type]
        )
    else:
        config = ConsumerConfig(
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=max(start_seq, 1)
        )
    config.ack_policy = AckPolicy.NONE
    config.mem_storage = True
    config.num_replicas = 1
    config.inactive_threshold = 60.0  # a reader that vanished leaves no consumer behind
    config.max_waiting = 4
    if len(subjects) == 1:
        config.filter_subject = subjects[0]
    else:
        config.filter_subjects = list(subjects)
    return config


class _Puller:
    """Owns the ephemeral consumer, keeps up to two batch requests outstanding, and
    collects what they deliver.

    The server serves a consumer's waiting requests in order, so the messages and the
    terminating statuses that arrive belong to the oldest open request: ``open`` holds how
    many messages each open request may still bring.

    An ephemeral consumer lives in one server's memory: a server restart or a cluster
    failover loses it together with the requests in flight. When the client reconnects
    (``bus.reconnects``) the consumer is re-created at once from the sequence after the
    last one handed out, so a reader never hangs and never skips. A failover can also lose
    the consumer without the client ever disconnecting, and then nothing would say so;
    hence the silence rule as well: when nothing at all (not even a heartbeat or an
    expiry) arrives for ``SILENCE_S``, the consumer is checked and re-created if gone.

    Every role may create consumers and pull from them (reading needs it), and the server
    does not check where a consumer delivers. So a message is taken only when its ack
    subject names this consumer and is the next in its sequence: another consumer's
    delivery onto our inbox (a message out of order that would end a replay early) is
    dropped, and a gap (someone else pulled messages from ours) re-creates the consumer
    after the last message handed out, so nothing is skipped (tests/auth/test_reading.py).
    """

    def __init__(
        self,
        bus: Bus,
        config: ConsumerConfig,
        follow: bool,
        *,
        stream: str = LOG_STREAM,
        batch: int = BATCH,
    ):
        self.bus = bus
        self.config = config
        self.follow = follow
        self.stream = stream
        self.batch = batch
        self.inbox = bus.nc.new_inbox()
        self.consumer = ""
        self.subject = ""
        self.buffer: deque[Msg] = deque()
        self.arrived = asyncio.Event()
        self.open: deque[int] = deque()
        self.failed: str | None = None
        self.reconnected = False
        self.last_seq = 0  # the last stream sequence handed to the reader
        self.delivered = 0  # the consumer sequence of the last message taken

    def on_reconnect(self) -> None:
        """The client is back after a disconnection: the consumer is probably gone."""
        self.reconnected = True
        self.arrived.set()

    async def create(self) -> int:
        """(Re-)create the consumer after ``last_seq``; returns its pending count."""
        if self.last_seq:
            self.config.deliver_policy = DeliverPolicy.BY_START_SEQUENCE
            self.config.opt_start_seq = self.last_seq + 1
            self.config.opt_start_time = None
        info = await self.bus.js.add_consumer(self.stream, config=self.config)
        self.consumer = str(info.name)
        self.subject = f"$JS.API.CONSUMER.MSG.NEXT.{self.stream}.{self.consumer}"
        self.open.clear()
        self.failed = None
        self.delivered = 0
        return int(info.num_pending or 0)

    def _ours(self, reply: str) -> bool:
        """Whether a message comes from this consumer, next in its order (see the class).

        A gap marks the consumer failed; until it is re-created nothing more is taken."""
        tokens = reply.split(".")
        if len(tokens) == 9:  # $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>...
            stream, consumer, taken = tokens[2], tokens[3], tokens[6]
        elif len(tokens) >= 12:  # with domain and account hash in front
            stream, consumer, taken = tokens[4], tokens[5], tokens[8]
        else:
            return False
        if self.failed or stream != self.stream or consumer != self.consumer:
            return False
        if taken != str(self.delivered + 1):
            self.failed = (
                f"consumer sequence {taken} after {self.delivered}: another client took "
                "messages from this reader's consumer"
            )
            return False
        self.delivered += 1
        return True

    async def on_message(self, msg: Msg) -> None:
        headers = msg.headers or {}
        status = headers.get("Status")
        if status is None:
            if not self._ours(msg.reply or ""):
                self.arrived.set()  # a gap is recovered from in next()
                return
            self.buffer.append(msg)
            if self.open:
                self.open[0] -= 1
                if self.open[0] <= 0:
                    self.open.popleft()  # the request got its whole batch
        elif status != "100":  # 100 is a heartbeat: it only proves the server is there
            # 404 no messages / 408 expired: that request is over. 409 ends it too; a
            # deleted consumer means no request will ever be answered again.
            if self.open:
                self.open.popleft()
            if status == "409" and "deleted" in headers.get("Description", "").lower():
                self.failed = f"{status} {headers.get('Description', '')}"
        self.arrived.set()

    async def top_up(self) -> None:
        """Ask for more while fewer than two requests are open and the buffer is low."""
        batch = self.batch
        while len(self.open) < 2 and sum(self.open) < batch and len(self.buffer) < batch:
            body: dict[str, object] = {"batch": batch}
            if self.follow:
                body["expires"] = int(EXPIRES_S * 1e9)
                body["idle_heartbeat"] = int(EXPIRES_S / 2 * 1e9)
            else:
                body["no_wait"] = True
            self.open.append(batch)
            await self.bus.nc.publish(self.subject, json.dumps(body).encode(), reply=self.inbox)

    async def recover(self) -> None:
        """Re-create the consumer where we left off: it was deleted, the client reconnected,
        or it went silent and is gone. Retries while the server is not ready (JetStream
        recovering after a restart, no stream leader yet)."""
        if not self.failed and not self.reconnected:
            with contextlib.suppress(Exception):
                await self.bus.js.consumer_info(self.stream, self.consumer)
                self.open.clear()  # it exists: only our requests were lost; ask again
                return
        # The old consumer is not deleted first: it is gone with its server, or (a client
        # that moved to another node) it is reaped by its inactive threshold, and a delete
        # sent while the cluster elects leaders would only delay the recovery.
        self.reconnected = False
        if self.failed:  # deleted already, or drained by someone else: do not leave it
            note("reader.consumer_replaced", consumer=self.consumer, why=self.failed)
            await _delete(self.bus, self.consumer, self.stream)
        await retrying(self.create, f"a reader's consumer on {self.stream}", self.bus.backoff)

    async def next(self) -> Msg:
        while not self.buffer:
            if self.failed or self.reconnected:
                await self.recover()
            # A recovery's requests and a top-up's publish can swallow a cancel (see
            # bus.cancel): without this, a reader cancelled then would follow for ever.
            raise_if_cancelled()
            self.arrived.clear()
            await self.top_up()
            if self.buffer:
                break
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancel
            # that lands as the wait completes, and the reader would then run on.
            try:
                async with asyncio.timeout(SILENCE_S):
                    await self.arrived.wait()
            except TimeoutError:
                await self.recover()
                raise_if_cancelled()
        msg = self.buffer.popleft()
        if len(self.buffer) < self.batch // 2:
            await self.top_up()
            raise_if_cancelled()  # not only once the buffer has drained
        return msg


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

    A message that does not decode, or whose event names another project than its
    subject (it would fold into one project and replay into another), is yielded with
    ``event=None`` and the reason in ``error``.
    """
    stop_at = until_seq
    if not follow:
        last = await bus.stream_last_seq()
        stop_at = last if stop_at is None else min(stop_at, last)
        if stop_at < max(start_seq, 1) and start_time is None:
            return
    puller = _Puller(bus, _consumer_config(subjects, start_seq, start_time), follow)
    # Retried as a re-creation is: just after a failover the new stream leader may not
    # answer the first consumer request in time (seen on a busy machine), which is "not
    # now", not "no". A create that did land leaves an ephemeral consumer the server
    # removes once inactive.
    pending_at_start = await retrying(
        puller.create, f"a reader's consumer on {puller.stream}", bus.backoff
    )
    if not follow and pending_at_start == 0:
        await _delete(bus, puller.consumer)
        return
    sub = await bus.nc.subscribe(puller.inbox, cb=puller.on_message, pending_msgs_limit=0)
    stop_listening = bus.reconnects.listen(puller.on_reconnect)
    try:
        while True:
            msg = await puller.next()
            seq, time_ns, pending = _position(msg)
            if seq <= puller.last_seq:
                continue  # re-delivered after a recovery
            puller.last_seq = seq
            if stop_at is not None and seq > stop_at:
                return
            data = msg.data
            event, error = _decode(data, msg.subject)
            yield Record(
                seq=seq,
                subject=msg.subject,
                time=datetime.fromtimestamp(time_ns / 1e9, UTC),
                event=event,
                error=error,
                data=data if (keep_data or error is not None) else b"",
                pending=pending,
            )
            if not follow and (pending == 0 or seq == stop_at):
                return
    finally:
        stop_listening()
        with contextlib.suppress(Exception):
            await asyncio.shield(sub.unsubscribe())
        await _delete(bus, puller.consumer)


def _decode(data: bytes, subject: str) -> tuple[Event | None, InvalidEvent | None]:
    """The event in ``data``, or why there is none: never an exception, whatever the bytes."""
    try:
        event = decode_event(data)
        if subject_of(event) != subject:
            return None, _misfiled(event, subject)
        return event, None
    except InvalidEvent as exc:
        return None, exc
    except Exception as exc:  # decode_event raises only InvalidEvent; subject_of is kind code
        return None, InvalidEvent(bounded(f"{type(exc).__name__} after decoding: {exc}"))


def _misfiled(event: Event, subject: str) -> InvalidEvent:
    return InvalidEvent(
        f"{event.kind}: stored on {subject} but belongs on {subject_of(event)} "
        f"(project {event.project!r})",
        field="project",
        value=event.project,
        kind=event.kind,
    )


async def _delete(bus: Bus, consumer: str, stream: str = LOG_STREAM) -> None:
    with contextlib.suppress(Exception):
        await asyncio.shield(bus.js.delete_consumer(stream, consumer))


def _position(msg: Msg) -> tuple[int, int, int]:
    """(stream sequence, timestamp in ns, pending) from the reply subject.

    nats-py's ``msg.metadata`` builds several objects per message; replay reads this often
    enough that splitting the ack subject once is measurably faster. The subject is
    ``$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>`` (9 tokens), or
    the newer form with domain and account hash in front and a random token at the end.
    """
    tokens = (msg.reply or "").split(".")
    if len(tokens) == 9:
        return int(tokens[5]), int(tokens[7]), int(tokens[8])
    if len(tokens) >= 12:
        return int(tokens[7]), int(tokens[9]), int(tokens[10])
    meta = msg.metadata
    stamp = int(meta.timestamp.timestamp() * 1e9) if meta.timestamp else 0
    return meta.sequence.stream, stamp, meta.num_pending
