"""The two hot paths of pipelined publishing, one level below nats-py's per-message API.

Why: nats-py's ``publish`` builds each header block from a dict and validates every
subject, and a subscription callback costs a ``Msg`` object, a queue round trip and a
coroutine per message. For a publish pipeline whose only traffic is events out and one
small acknowledgement back per event, that bookkeeping, not the server, is the limit
(see docs/performance.md). So :class:`Wire`

* writes ``HPUB`` frames itself, many per write, carrying a ``Nats-Msg-Id`` header, and
* hands the messages of its own subscriptions (the acknowledgements) to a plain function
  with the raw subject and payload, before nats-py builds anything for them: complete
  ``MSG`` frames for those subscriptions are cut out of what the socket read before nats-py's
  parser sees it (its regular expressions and one coroutine per message cost more than the
  rest of an acknowledgement), and anything else goes on to that parser.

Both use nats-py internals (``_send_command``, ``_flush_pending``, ``_process_msg``, the
parser ``_ps``), so each checks they exist and otherwise takes nats-py's public API:
slower, never wrong.
``tests/bus/test_publish_many.py`` fails when a nats-py upgrade turns either off.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import nats.errors
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.protocol.parser import AWAITING_CONTROL_LINE

Handler = Callable[[bytes, bytes, bytes | None], None]
Frame = tuple[str, str, str, bytes] | tuple[str, str, str, bytes, dict[str, str] | None]
"""(subject, reply, msg_id, payload[, extra headers]) of one publish."""
"""Called with (subject, payload, raw header block or None) for each message."""

_NOT_A_SUBJECT = re.compile(r"\s")  # whitespace or CR/LF would break (or inject) a frame
_INTERNALS = ("_process_msg", "_send_command", "_flush_pending", "_flush_queue")
_PARSER_INTERNALS = ("parse", "buf", "state")
_MSG = b"MSG "
_KEEP_WHOLE = 64 * 1024
"""Largest unfinished frame of ours kept back until it is complete (acks are ~40 bytes)."""
_HEADER_START = b"NATS/1.0\r\nNats-Msg-Id: "
_HEADER_END = b"\r\n\r\n"
_HEADER_SIZE = len(_HEADER_START) + len(_HEADER_END)
_HPUB = b"HPUB %s %s %d %d\r\n" + _HEADER_START + b"%s" + _HEADER_END + b"%s\r\n"
"""One publish with a ``Nats-Msg-Id`` header and nothing else, in one formatting."""


class Wire:
    """One client's fast path for frames out and messages in (see the module docstring)."""

    def __init__(self, nc: NatsClient):
        self.nc = nc
        self.direct = all(hasattr(nc, name) for name in _INTERNALS)
        """Whether the fast path is on (nats-py's internals are the ones this was built on)."""
        self._handlers: dict[int, Handler] = {}
        self._valid: set[str] = set()  # subjects already checked
        if self.direct:
            inner = nc._process_msg
            handlers = self._handlers

            async def process(
                sid: int, subject: bytes, reply: bytes, data: bytes, headers: bytes | None
            ) -> None:
                handler = handlers.get(sid)
                if handler is None:
                    await inner(sid, subject, reply, data, headers)  # type: ignore[arg-type]
                else:
                    handler(subject, data, headers)

            nc._process_msg = process  # type: ignore[method-assign]
            parser = getattr(nc, "_ps", None)
            self.cuts = all(hasattr(parser, name) for name in _PARSER_INTERNALS)
            """Whether own messages are cut out before nats-py's parser (see the module)."""
            if self.cuts:
                self._cut_before(parser)
        else:
            self.cuts = False

    def _cut_before(self, parser: Any) -> None:
        """Put :meth:`_deliver_own` in front of nats-py's parser.

        The parser keeps what it could not finish in ``buf``; when it is between messages
        (``AWAITING_CONTROL_LINE``) that remainder is taken back and read together with the
        new bytes, so a frame split across two reads still takes the fast path. Whatever
        does not start with one of our complete ``MSG`` frames goes to the parser as is, in
        order.
        """
        parse = parser.parse

        async def cut_then_parse(data: bytes = b"") -> None:
            if parser.state != AWAITING_CONTROL_LINE or not self._handlers:
                await parse(data)
                return
            if parser.buf:
                data = bytes(parser.buf) + data
                parser.buf.clear()
            at, waiting = self._deliver_own(data)
            if at == len(data):
                return
            if waiting:  # our frame, or a control line, not complete yet: keep it
                parser.buf.extend(data[at:] if at else data)
            else:
                await parse(data[at:] if at else data)

        parser.parse = cut_then_parse

    def _deliver_own(self, data: bytes) -> tuple[int, bool]:
        """Hand each complete ``MSG`` frame at the head of ``data`` addressed to one of our
        subscriptions to its handler. Returns where the rest starts, and whether the rest
        is an unfinished frame or control line (rather than something for the parser)."""
        handlers, at, end = self._handlers, 0, len(data)
        while data.startswith(_MSG, at):
            line_end = data.find(b"\r\n", at)
            if line_end < 0:
                return at, True
            parts = data[at + 4 : line_end].split()  # <subject> <sid> [reply] <size>
            if len(parts) not in (3, 4) or not parts[-1].isdigit():
                return at, False  # let nats-py's parser say what is wrong with it
            handler = handlers.get(int(parts[1])) if parts[1].isdigit() else None
            if handler is None:
                return at, False
            stop = line_end + 2 + int(parts[-1])
            if stop + 2 > end:
                # Kept whole until complete, unless large: nats-py's parser takes that in
                # pieces without copying it again on every read.
                return at, stop - at <= _KEEP_WHOLE
            handler(parts[0], data[line_end + 2 : stop], None)
            at = stop + 2
        return at, False

    async def subscribe(self, subject: str, handler: Handler) -> Callable[[], Awaitable[None]]:
        """Deliver every message on ``subject`` to ``handler``; returns the unsubscriber."""
        if self.direct:
            sub = await self.nc.subscribe(subject)
            self._handlers[sub._id] = handler
        else:

            async def relay(msg: Msg) -> None:
                handler(msg.subject.encode(), msg.data, _header_block(msg))

            sub = await self.nc.subscribe(subject, cb=relay, pending_msgs_limit=-1)

        async def unsubscribe() -> None:
            self._handlers.pop(sub._id, None)
            await sub.unsubscribe()

        return unsubscribe

    async def send(self, items: Sequence[Frame]) -> None:
        """Publish each (subject, reply, msg_id, payload[, headers]), with ``Nats-Msg-Id:
        msg_id`` and the optional extra headers.

        On the fast path they leave as one write of ``HPUB`` frames; otherwise through
        nats-py's ``publish``, one by one.
        """
        nc = self.nc
        if nc.is_closed:
            raise nats.errors.ConnectionClosedError
        if not self.direct:
            for subject, reply, msg_id, payload, *extra in items:
                headers = {"Nats-Msg-Id": msg_id, **(extra[0] if extra and extra[0] else {})}
                await nc.publish(subject, payload, reply=reply, headers=headers)
            return
        await nc._send_command(b"".join([self._frame(*item) for item in items]))
        if nc._flush_queue is not None and nc._flush_queue.empty():
            await nc._flush_pending()

    def publishable(self, subject: str) -> bool:
        """What nats-py's publish checks: no empty subject, no whitespace or CR/LF (which
        would break, or inject into, the protocol)."""
        if subject in self._valid:
            return True
        if not subject or _NOT_A_SUBJECT.search(subject):
            return False
        if len(self._valid) > 10_000:
            self._valid.clear()
        self._valid.add(subject)
        return True

    def _frame(
        self,
        subject: str,
        reply: str,
        msg_id: str,
        payload: bytes,
        extra: dict[str, str] | None = None,
    ) -> bytes:
        # The checks nats-py's publish makes (an oversized frame makes the server drop
        # the connection); replies are ours (an inbox and a number), not checked again.
        if subject not in self._valid and not self.publishable(subject):
            raise nats.errors.BadSubjectError
        if extra:
            return self._frame_with(subject, reply, msg_id, payload, extra)
        msg_id_bytes = msg_id.encode()
        header_size = _HEADER_SIZE + len(msg_id_bytes)
        size = header_size + len(payload)
        if size > self.nc.max_payload:
            raise nats.errors.MaxPayloadError
        return _HPUB % (
            subject.encode(),
            reply.encode(),
            header_size,
            size,
            msg_id_bytes,
            payload,
        )

    def _frame_with(
        self, subject: str, reply: str, msg_id: str, payload: bytes, extra: dict[str, str]
    ) -> bytes:
        """A frame whose header block carries ``extra`` headers after ``Nats-Msg-Id``."""
        lines = "".join(f"{name}: {value}\r\n" for name, value in extra.items())
        header = _HEADER_START + msg_id.encode() + b"\r\n" + lines.encode() + b"\r\n"
        size = len(header) + len(payload)
        if size > self.nc.max_payload:
            raise nats.errors.MaxPayloadError
        return b"HPUB %s %s %d %d\r\n%s%s\r\n" % (
            subject.encode(),
            reply.encode(),
            len(header),
            size,
            header,
            payload,
        )


def _header_block(msg: Msg) -> bytes | None:
    """A status reply (e.g. 503 no responders) as the raw header line nats-py parsed."""
    headers: dict[str, Any] | None = msg.headers
    if not headers:
        return None
    status = headers.get("Status", "")
    return f"NATS/1.0 {status}\r\n".encode()
