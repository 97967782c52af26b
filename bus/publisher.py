"""Appending many events: the pipeline behind ``Bus.publish_many``.

(The atomic batch behind ``Bus.publish_atomic`` is :mod:`bus.atomic`.)

The pipeline sends every event as a JetStream publish with ``Nats-Msg-Id`` = the event id
and a reply subject ``<inbox>.<round>.<index>`` of its own, keeps up to ``window`` of them
unanswered, and files each acknowledgement by index as it arrives, on the fast path of
:mod:`bus.wire`. Events left unanswered (an ack lost, a server restarting, a
stream electing a leader: "no responders") are sent again, after a back-off, with the
same ``Nats-Msg-Id``: the server stores an event once and acks a repeat as a duplicate
with the first sequence, so every event gets its exact sequence and nothing is stored
twice. When no answer at all comes for the back-off budget, it gives up with
:class:`PublishFailed`.

Each event is encoded, decoded back and checked (subject, size, this credential's
permissions) just before it is sent, a chunk at a time, so that work overlaps with the
server storing the events before it. The first event that fails a check ends the call
there: every event before it is stored (and acknowledged) first, then its error is raised
with a note saying how far the call got; nothing from it on is sent. A caller that needs
all of a call or none of it uses ``publish_atomic``.

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
from typing import TYPE_CHECKING, NamedTuple, overload

import nats.errors

from bus.errors import PublishFailed
from bus.provision import LOG_STREAM
from bus.wire import Frame
from schemas import Event, decode_event, encode_event, subject_of

if TYPE_CHECKING:
    from bus.connection import Bus

ACK_WAIT = 5.0
"""Seconds without any answer after which a round's unanswered events are sent again (a
stream whose leader died answers nothing until another is elected)."""
CHUNK = 512
"""Frames per write, and per yield to the client's reader (see ``_flush``): fewer, larger
writes and reads of acknowledgements cost the server and this client less per event (at
64 the server spent more CPU per event than for nats-py's ``publish_async``; see
docs/performance.md, 2026-12-07); an eighth of the default window (a quarter of the
views' 2,048), so it keeps moving."""
CHUNK_BYTES = 1 << 20
"""Payload bytes after which a write goes out before it holds ``CHUNK`` frames: a write is
joined into one buffer, and 512 events near the server's 1 MB limit (view parts are up to
256 KB) would make that buffer hundreds of megabytes."""

_DUPLICATE = re.compile(rb'"duplicate"\s*:\s*true')
_SEQ = re.compile(rb'"seq"\s*:\s*(\d+)')
_STORED = b'{"stream":"%s","seq":' % LOG_STREAM.encode()
"""How the log's acknowledgement of a newly stored event starts (the sequence follows)."""
_SEQ_AT = len(_STORED)


class Ack(NamedTuple):
    """Where the log stored an event; ``duplicate`` when it was already there (same id)."""

    seq: int
    duplicate: bool = False


class Acks(Sequence[Ack]):
    """Where each event of one call was stored, in the call's order, as :class:`Ack` made
    when asked for.

    Why not a list of acks: a tuple subclass is never untracked by the garbage collector,
    so 50,000 of them made the collector's full passes over the caller's whole heap come
    sooner, and cost about a tenth of a large call. Here they are one list of integers.
    """

    __slots__ = ("duplicates", "seqs")

    def __init__(self, seqs: list[int], duplicates: frozenset[int] = frozenset()):
        self.seqs = seqs
        """The sequences, in call order."""
        self.duplicates = duplicates
        """Positions of the events the log already held (acked with their first sequence)."""

    def __len__(self) -> int:
        return len(self.seqs)

    @overload
    def __getitem__(self, index: int) -> Ack: ...

    @overload
    def __getitem__(self, index: slice) -> list[Ack]: ...

    def __getitem__(self, index: int | slice) -> Ack | list[Ack]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self.seqs))[index]]
        position = range(len(self.seqs))[index]  # negative positions, and IndexError
        return Ack(self.seqs[position], position in self.duplicates)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Acks | list):  # like a list: never equal to a tuple
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a list, so unhashable like one

    def __repr__(self) -> str:
        return f"Acks({list(self)!r})"


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
        events: Sequence[Event] = (),
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
        self.prefix_bytes = f"{self.prefix}.".encode()
        self.token_at = len(self.prefix_bytes)  # where a reply subject's number starts
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
        self.events = events
        self.ready = 0  # messages encoded and checked, from the first on
        self.refusal: Exception | None = None  # why the message at `ready` is not sent
        if not events:
            self._prepare(len(subjects))  # values built by loopbus: all checked up front

    @classmethod
    def of_events(cls, bus: Bus, events: Sequence[Event], window: int) -> Pipeline:
        count = len(events)
        return cls(bus, [""] * count, [b""] * count, [""] * count, window, events=events)

    def _prepare(self, upto: int) -> None:
        """Encode, address and check the messages before ``upto`` not done yet, in order.

        Raises on the first one the log could not take: an event that would not decode
        back (see :func:`encode_checked`), a subject this credential may not publish to or
        that is no subject at all, or more bytes than the server takes. ``ready`` counts
        the ones that passed.
        """
        bus, events = self.bus, self.events
        subjects, payloads, msg_ids = self.subjects, self.payloads, self.msg_ids
        publishable, check_publish = bus.wire.publishable, bus.check_publish
        limit = bus.nc.max_payload - 64  # room for the Nats-Msg-Id header block
        for index in range(self.ready, min(upto, len(subjects))):
            if events:
                event = events[index]
                subjects[index] = subject = subject_of(event)
                payloads[index] = payload = encode_checked(event)
                msg_ids[index] = event.id
            else:
                subject, payload = subjects[index], payloads[index]
            if len(payload) > limit:
                raise PublishFailed(
                    subject, f"the event is {len(payload)} bytes; the server takes {limit}"
                )
            if not publishable(subject):
                raise PublishFailed(subject, "not a subject a message can be published to")
            check_publish(subject)
            self.ready = index + 1

    def _prepared(self, index: int) -> bool:
        """Whether message ``index`` may be sent, preparing it and the chunk after it when
        needed. Events are checked just before they are sent, so checking overlaps with
        the server storing the ones before; the first refused one ends the sending, and
        :meth:`run` raises its error once every event before it is stored."""
        if index >= self.ready and self.refusal is None:
            try:
                self._prepare(index + CHUNK)
            except Exception as exc:  # raised again by run(), after what went before
                self.refusal = exc
        return index < self.ready

    def on_reply(self, subject: bytes, data: bytes, headers: bytes | None) -> None:
        """File one answer (called for every message on our reply subjects)."""
        # The last token is round * len(events) + index: one slice and one int per answer.
        token = subject[self.token_at :]
        if not token.isdigit() or not subject.startswith(self.prefix_bytes):
            return  # not one of our replies (a consumer may deliver anything anywhere)
        round_no, index = divmod(int(token), self.stride)
        if not data:  # a status with no body: 503 "no responders", nothing was stored
            if round_no == self.round and index in self.waiting:
                self._unanswered(index)
            return
        seqs = self.seqs
        if seqs[index] or index in self.errors:
            return  # a late answer to an event sent again
        if data.startswith(_STORED) and data[_SEQ_AT:-1].isdigit() and data[-1:] == b"}":
            seqs[index] = int(data[_SEQ_AT:-1])  # the usual answer: stored, nothing else
        else:
            seq = _SEQ.search(data)
            if seq is None or b'"error"' in data:
                self._refused(index, data, round_no == self.round)
                return
            seqs[index] = int(seq[1])
            if b'"duplicate"' in data and _DUPLICATE.search(data):
                self.duplicates.add(index)
        self.progress += 1
        # What _answered does, inline: this runs once per event.
        self.answers += 1
        waiting = self.waiting
        waiting.discard(index)
        if len(waiting) <= self.wake_at:
            self.woken.set()

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

    async def run(self) -> Acks:
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
                end = self.ready if self.refusal is not None else len(self.seqs)
                pending = [
                    i for i in pending if i < end and not self.seqs[i] and i not in self.errors
                ]
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
        waiting = self.waiting
        waiting.clear()
        seqs, errors, headers = self.seqs, self.errors, self.headers
        first = self.round * self.stride  # replies number rounds apart (see on_reply)
        chunk: list[Frame] = []
        framed = 0  # payload bytes in `chunk`
        for index in pending:
            if seqs[index] or index in errors:
                continue  # answered late, after the previous round gave up on it
            if index >= self.ready and not self._prepared(index):
                break  # refused: nothing from here on is sent
            if len(waiting) >= self.window:
                if not await self._room(chunk):
                    return  # reconnecting, or nothing answers: the rest go in a later round
                framed = 0
            chunk.append(
                (
                    self.subjects[index],
                    f"{self.prefix}.{first + index}",
                    self.msg_ids[index],
                    self.payloads[index],
                    headers[index] if headers is not None else None,
                )
            )
            waiting.add(index)
            framed += len(self.payloads[index])
            if len(chunk) >= CHUNK or framed >= CHUNK_BYTES:
                if not await self._flush(chunk):
                    return
                framed = 0
        await self._flush(chunk)

    async def _flush(self, chunk: list[Frame]) -> bool:
        """Send ``chunk``; ``False`` (nothing sent) while the client is reconnecting, when
        nats-py would only buffer it: the round ends and a later one sends it."""
        if not self.bus.nc.is_connected:
            self.interrupted = True  # what waits is cleared when the next round starts
            return False
        if chunk:
            await self.bus.wire.send(chunk)
            chunk.clear()
            # Let nats-py's flusher write the chunk and its reader take acknowledgements in
            # now: otherwise they wait until the window fills, and the server idles while
            # this side checks and frames the next thousands of events.
            await asyncio.sleep(0)
        return True

    async def _room(self, chunk: list[Frame]) -> bool:
        """Send what is framed and wait until half the window is answered; ``False`` when
        the round must end (see :meth:`_flush` and :meth:`_wait_until`)."""
        return await self._flush(chunk) and await self._wait_until(self.window // 2)

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

    def _result(self, budget: float) -> Acks:
        if self.errors:
            first = min(self.errors)
            raise PublishFailed(
                self.subjects[first], f"{len(self.errors)} events refused: {self.errors[first]}"
            ) from self.refusal  # an event refused here too, if any: not sent either
        end = self.ready if self.refusal is not None else len(self.seqs)
        missing = [i for i, seq in enumerate(self.seqs[:end]) if not seq]
        if missing:
            raise PublishFailed(
                self.subjects[missing[0]],
                f"{len(missing)} events never acknowledged: no answer from NATS for "
                f"{budget:g} s (they may be stored; publishing them again stores them once)",
            ) from self.refusal
        if self.refusal is not None:
            after = len(self.seqs) - self.ready - 1
            self.refusal.add_note(
                f"publish_many sends events in order and stopped at this one (index "
                f"{self.ready}): the {self.ready} before it are stored, it and the {after} "
                "after it are not; fix it and publish the call again (what is stored is "
                "stored once)"
            )
            raise self.refusal
        return Acks(self.seqs, frozenset(self.duplicates))
