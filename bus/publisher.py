"""Appending many events: the pipeline behind ``Bus.publish_many`` and the atomic batch
behind ``Bus.publish_atomic``.

The pipeline sends every event as a JetStream publish with ``Nats-Msg-Id`` = the event id
and a reply subject ``<inbox>.<round>.<index>`` of its own, keeps up to ``window`` of them
unanswered, and files each acknowledgement by index as it arrives, on the fast path of
:mod:`loopbus.bus.wire`. Events left unanswered (an ack lost, a server restarting, a
stream electing a leader: "no responders") are sent again, after a back-off, with the
same ``Nats-Msg-Id``: the server stores an event once and acks a repeat as a duplicate
with the first sequence, so every event gets its exact sequence and nothing is stored
twice. When no answer at all comes for the back-off budget, it gives up with
:class:`PublishFailed`.

Why not JetStream's batch publishing (see docs/performance.md for the measurements): an
atomic batch (2.12+) is refused whole when one event is a duplicate and was slower than
this pipeline; a fast batch (2.14+, not in the compose image) keeps ``Nats-Msg-Id``
de-duplication but acknowledges batch positions, not stream sequences, and skips a
duplicate silently, so it cannot say where each event was stored.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import nats.errors
from loopbus.bus.errors import BatchRefused, PublishFailed, ServerUnavailable
from loopbus.bus.retry import retrying
from loopbus.bus.wire import Frame
from loopbus.schemas import Event, decode_event, encode_event, subject_of
from nats.js.api import Header

if TYPE_CHECKING:
    from loopbus.bus.connection import Bus

ACK_WAIT = 5.0
"""Seconds without any answer after which a round's unanswered events are sent again (a
stream whose leader died answers nothing until another is elected)."""
CHUNK = 64
"""Frames per write: fewer, larger writes; small enough to keep the window moving."""
ATOMIC_BATCH_LIMIT = 1000
"""The server's default cap on one atomic batch."""

_DUPLICATE = re.compile(rb'"duplicate"\s*:\s*true')


class Ack(NamedTuple):
    """Where the log stored an event; ``duplicate`` when it was already there (same id)."""

    seq: int
    duplicate: bool = False


def encode_checked(event: Event) -> bytes:
    """The event's bytes, after proving they decode back (``InvalidEvent`` otherwise).

    Constructors do not apply every constraint that decoding does (msgspec checks ``Meta``
    bounds only on decode), so an event built in code could otherwise be stored and then
    be quarantined by every reader. Decoding costs about a microsecond, against tens of
    microseconds to publish.
    """
    payload = encode_event(event)
    decode_event(payload)
    return payload


class Pipeline:
    """One ``publish_many`` call: its messages, their answers, and the rounds of sending.

    Messages are events (:meth:`of_events`) or, for the projector's views, KV values on
    ``$KV.<bucket>.<key>`` subjects with an id of their own and extra headers."""

    def __init__(
        self,
        bus: Bus,
        subjects: list[str],
        payloads: list[bytes],
        msg_ids: list[str],
        window: int,
        headers: list[dict[str, str] | None] | None = None,
    ):
        self.bus = bus
        self.subjects = subjects
        self.payloads = payloads
        self.msg_ids = msg_ids
        self.headers = headers
        self.window = max(window, 1)
        self.seqs = [0] * len(subjects)  # where each message was stored; 0 = not yet
        self.duplicates: set[int] = set()
        self.errors: dict[int, str] = {}
        self.prefix = f"{bus.nc.new_inbox()}.pub"
        self.round = 0
        self.stride = len(subjects)
        self.waiting: set[int] = set()  # sent this round, not answered yet
        self.unanswered = 0  # "no responders" this round
        self.progress = 0  # acks and refusals filed, in every round
        self.answers = 0  # every answer, "no responders" included
        # The sender sleeps until at most `wake_at` events are waiting: one wake-up per
        # half window rather than one task switch per acknowledgement.
        self.wake_at = -1
        self.woken = asyncio.Event()
        self.interrupted = False  # the client reconnected: answers in flight are lost
        self._check_sizes()

    @classmethod
    def of_events(cls, bus: Bus, events: list[Event], window: int) -> Pipeline:
        payloads = [encode_checked(e) for e in events]
        return cls(bus, [subject_of(e) for e in events], payloads, [e.id for e in events], window)

    def _check_sizes(self) -> None:
        """Refuse, before anything is sent, an event the server would refuse to take."""
        limit = self.bus.nc.max_payload - 64  # room for the Nats-Msg-Id header block
        for subject, payload in zip(self.subjects, self.payloads, strict=True):
            if len(payload) > limit:
                raise PublishFailed(
                    subject, f"the event is {len(payload)} bytes; the server takes {limit}"
                )
            if not self.bus.wire.publishable(subject):
                raise PublishFailed(subject, "not a subject a message can be published to")
            self.bus.check_publish(subject)

    def on_reply(self, subject: bytes, data: bytes, headers: bytes | None) -> None:
        """File one answer (called for every message on our reply subjects)."""
        # The last token is round * len(events) + index: one split and one int per answer.
        token = subject[subject.rfind(b".") + 1 :]
        if not token.isdigit():
            return  # not one of our replies (nothing else is subscribed here)
        round_no, index = divmod(int(token), self.stride)
        this_round = round_no == self.round
        if not data:  # a status with no body: 503 "no responders", nothing was stored
            if this_round and index in self.waiting:
                self._unanswered(index)
            return
        if self.seqs[index] or index in self.errors:
            return  # a late answer to an event sent again
        at = data.find(b'"seq":')
        if at < 0 or b'"error"' in data:
            self._refused(index, data, this_round)
            return
        end = data.find(b",", at)
        try:
            self.seqs[index] = int(data[at + 6 : end if end > 0 else data.find(b"}", at)])
        except ValueError:
            return  # not an acknowledgement after all: the event is sent again
        if b'"duplicate"' in data and _DUPLICATE.search(data):
            self.duplicates.add(index)
        self.progress += 1
        self._answered(index)

    def _refused(self, index: int, data: bytes, this_round: bool) -> None:
        try:
            error = json.loads(data).get("error") or {}
        except ValueError:
            return  # not an answer we know: the event is sent again
        if error.get("code") == 503:  # JetStream not ready: like no responders
            if this_round and index in self.waiting:
                self._unanswered(index)
            return
        self.errors[index] = f"{error.get('description')} (err_code={error.get('err_code')})"
        self.progress += 1
        self._answered(index)

    def _unanswered(self, index: int) -> None:
        self.unanswered += 1
        self._answered(index)

    def on_reconnect(self) -> None:
        """Acks due on the old connection will not come: end the round, send the rest again."""
        self.interrupted = True
        self.woken.set()

    def _answered(self, index: int) -> None:
        self.answers += 1
        self.waiting.discard(index)
        if len(self.waiting) <= self.wake_at:
            self.woken.set()

    async def run(self) -> list[Ack]:
        unsubscribe = await self.bus.wire.subscribe(f"{self.prefix}.*", self.on_reply)
        stop_listening = self.bus.reconnects.listen(self.on_reconnect)
        loop = asyncio.get_running_loop()
        backoff = self.bus.backoff
        delay = backoff.first
        last_progress = loop.time()
        try:
            pending = list(range(len(self.subjects)))
            while pending:
                progress_before = self.progress
                await self._send_round(pending)
                await self._drain()
                pending = [i for i in pending if not self.seqs[i] and i not in self.errors]
                if not pending:
                    break
                if self.progress != progress_before:
                    last_progress, delay = loop.time(), backoff.first
                elif self.unanswered:
                    await self.bus._require_log()  # no stream at all: say so, do not wait
                if loop.time() - last_progress > backoff.budget:
                    break
                await asyncio.sleep(delay)
                delay = min(delay * 2, backoff.cap)
        except nats.errors.ConnectionClosedError as exc:
            raise PublishFailed(self.subjects[0], "connection closed") from exc
        finally:
            stop_listening()
            await unsubscribe()
        return self._result(backoff.budget)

    async def _send_round(self, pending: Sequence[int]) -> None:
        self.round += 1
        self.unanswered = 0
        self.interrupted = False
        self.waiting.clear()
        chunk: list[Frame] = []
        for index in pending:
            if self.seqs[index] or index in self.errors:
                continue  # answered late, after the previous round gave up on it
            if not self.bus.nc.is_connected:
                self.interrupted = True  # reconnecting: nats-py would only buffer them
                return
            if len(self.waiting) >= self.window:
                await self._flush(chunk)
                if not await self._wait_below_window():
                    return  # nothing answers: end the round, send the rest again later
            reply = f"{self.prefix}.{self.round * self.stride + index}"
            extra = self.headers[index] if self.headers is not None else None
            chunk.append(
                (self.subjects[index], reply, self.msg_ids[index], self.payloads[index], extra)
            )
            self.waiting.add(index)
            if len(chunk) >= CHUNK:
                await self._flush(chunk)
        await self._flush(chunk)

    async def _flush(self, chunk: list[Frame]) -> None:
        if chunk:
            await self.bus.wire.send(chunk)
            chunk.clear()

    async def _wait_below_window(self) -> bool:
        return await self._wait_until(self.window // 2)

    async def _drain(self) -> None:
        await self._wait_until(0)

    async def _wait_until(self, level: int) -> bool:
        """Sleep until at most ``level`` events wait for an answer; ``False`` when no answer
        at all came for ``ACK_WAIT`` seconds, or the client reconnected (the rest are sent
        again in the next round)."""
        while len(self.waiting) > level and not self.interrupted:
            answers = self.answers
            self.wake_at = level
            self.woken.clear()
            try:
                async with asyncio.timeout(ACK_WAIT):
                    await self.woken.wait()
            except TimeoutError:
                if self.answers == answers:
                    return False
            finally:
                self.wake_at = -1
        return not self.interrupted

    def _result(self, budget: float) -> list[Ack]:
        if self.errors:
            first = min(self.errors)
            raise PublishFailed(
                self.subjects[first], f"{len(self.errors)} events refused: {self.errors[first]}"
            )
        missing = [i for i, seq in enumerate(self.seqs) if not seq]
        if missing:
            raise PublishFailed(
                self.subjects[missing[0]],
                f"{len(missing)} events never acknowledged: no answer from NATS for "
                f"{budget:g} s (they may be stored; publishing them again stores them once)",
            )
        return [Ack(seq, i in self.duplicates) for i, seq in enumerate(self.seqs)]


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
