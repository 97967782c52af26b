"""The one place that talks to NATS: connect, publish (single, pipelined, conditional,
atomic), read the log back, and open KV buckets.

Why the cut is here: every other package speaks in :mod:`schemas` events and stream
sequences. NATS exceptions are translated into :mod:`bus.errors` at this boundary, so a
worker never has to know which client library raised what.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.api import Header

from bus.atomic import publish_atomic
from bus.auth import describe
from bus.callbacks import Reconnects, Violations
from bus.creds import Credential
from bus.errors import (
    BusError,
    BusUnreachable,
    LogNotProvisioned,
    NotNats,
    PermissionDenied,
    PublishFailed,
    ServerUnavailable,
    TransitionConflict,
)
from bus.greeting import not_nats, scheme_problem
from bus.kv import Bucket
from bus.names import DEFAULT_URL as DEFAULT_URL
from bus.names import NATS_URL_ENV as NATS_URL_ENV
from bus.provision import LOG_STREAM
from bus.publisher import Ack, Acks, Pipeline, encode_checked
from bus.retry import TRANSIENT, Backoff, RetryingKeyValue, retrying
from bus.tls_only import PlaintextServer, TlsOnlyClient, demands_tls, refusal
from bus.wire import Wire
from schemas import Event, subject_of

# JetStream's error code for a failed Nats-Expected-Last-Subject-Sequence check.
WRONG_LAST_SEQUENCE = 10071
CLOSE_DRAIN_S = 5.0
"""How long closing a connection waits for it to drain before closing it outright."""
CANCEL_GRACE_S = 1.0
"""How long closing waits for the drains it had to cancel to end."""

DEFAULT_WINDOW = 4096  # acks in flight for a pipelined publish; past it we wait for some
ACK_TIMEOUT = 10.0  # seconds before an unanswered publish is retried (Msg-Id makes it safe)
ATTEMPT_TIMEOUT = 5.0  # one try of a call that is retried within the back-off
DAEMON_BACKOFF = Backoff(budget=30.0)  # a stream leader election took ~6 s in the issue
COMMAND_BACKOFF = Backoff(budget=10.0)  # a person waits at a terminal


async def connect(
    url: str,
    *,
    name: str = "loopbus",
    timeout: float = 5.0,
    creds: Credential | None = None,
    tls_ca: Path | None = None,
) -> Bus:
    """Connect a long-running daemon: it keeps reconnecting for ever once connected.

    The first connection is bounded by ``timeout``; :class:`BusUnreachable` names the URL.
    ``creds`` is the credential to authenticate with (none: a server without auth);
    ``tls_ca`` the CA to trust for a server that requires TLS.
    """
    _check_scheme(url)
    options: dict[str, Any] = {
        "allow_reconnect": True,
        "max_reconnect_attempts": -1,
        "reconnect_time_wait": 0.5,
    }
    return await _connect(url, name, timeout, options, DAEMON_BACKOFF, creds, tls_ca)


async def connect_once(
    url: str,
    *,
    name: str = "loopbus-cli",
    timeout: float = 2.0,
    creds: Credential | None = None,
    tls_ca: Path | None = None,
) -> Bus:
    """Connect a one-shot command: give up at the first failure."""
    _check_scheme(url)
    _probe(url)
    options: dict[str, Any] = {"allow_reconnect": False, "max_reconnect_attempts": 1}
    return await _connect(url, name, timeout, options, COMMAND_BACKOFF, creds, tls_ca)


def server_urls(url: str) -> list[str]:
    """The servers in ``url``: one URL, or several separated by commas (a cluster).

    nats-py takes a cluster as a list; a comma-separated string would be parsed as one URL.
    """
    return [part.strip() for part in url.split(",") if part.strip()]


def _check_scheme(url: str) -> None:
    problem = scheme_problem(url)
    if problem is not None:
        raise NotNats(url, problem)


def _probe(url: str) -> None:
    """Fail fast with "connection refused" instead of waiting out a connect timeout.

    With several servers it is enough that one of them accepts a connection.
    """
    reason = "no server in the URL"
    for server in server_urls(url):
        try:
            parsed = urlsplit(server if "://" in server else f"nats://{server}")
            # nats-py's own defaults for a server named without host or port (not loopbus's)
            host, port = parsed.hostname or "127.0.0.1", parsed.port or 4222
        except ValueError as exc:  # e.g. a port that is not a number
            raise BusUnreachable(url, f"invalid server URL {server!r}: {exc}") from exc
        try:
            with socket.create_connection((host, port), timeout=2.0):
                return
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
        except UnicodeError:  # IDNA refused the name (a..b): a traceback from the resolver
            reason = f"{host!r} is not a host name"
    raise BusUnreachable(url, reason)


async def _connect(
    url: str,
    name: str,
    timeout: float,
    options: dict[str, Any],
    backoff: Backoff,
    creds: Credential | None = None,
    tls_ca: Path | None = None,
) -> Bus:
    violations = Violations()

    # The last plaintext server refused, not every one: a daemon retries every 0.5 s for
    # as long as it lives, and each refusal holds its traceback.
    plaintext: PlaintextServer | None = None

    async def _quiet(exc: Exception) -> None:
        # nats-py reports connection errors through this callback *and* by raising; we
        # surface the raise only, as one line, instead of a logged traceback per attempt.
        # A permissions violation is only ever reported here: keep it for the publish.
        # So is a plaintext server refused while a daemon's first connect keeps retrying.
        nonlocal plaintext
        violations.note(str(exc))
        if isinstance(exc, PlaintextServer):
            plaintext = exc

    if creds is not None:
        options = options | {"nkeys_seed_str": creds.seed}
    if tls_ca is not None:
        # Here, not at the top: bus.tls also makes certificates, with cryptography's x509,
        # which a command that connects without TLS should not import.
        from bus.tls import client_context

        try:
            options = options | {"tls": client_context(tls_ca)}
        except (OSError, ssl.SSLError) as exc:
            raise BusError(f"--tls-ca {str(tls_ca)!r} is not a readable CA file ({exc})") from exc
    options["connect_timeout"] = min(timeout, 2.0)  # a float: Client.connect's hint says int
    reconnects = Reconnects()
    nc = TlsOnlyClient() if demands_tls(server_urls(url), tls_ca) else NatsClient()
    try:
        await asyncio.wait_for(
            nc.connect(
                server_urls(url),
                name=name,
                error_cb=_quiet,
                reconnected_cb=reconnects.reconnected,
                disconnected_cb=reconnects.disconnected,
                **options,
            ),
            timeout,
        )
    except (OSError, TimeoutError, nats.errors.Error) as exc:
        if plaintext is not None:
            raise BusError(refusal(url, plaintext.server, tls_ca)) from exc
        refused = isinstance(exc, nats.errors.AuthorizationError) or violations.unauthorized
        if not refused:
            # Something that is not NATS times out like a dead server: ask it what it is.
            other = await asyncio.to_thread(not_nats, url)
            if other is not None:
                raise NotNats(url, other) from exc
            raise BusUnreachable(url, type(exc).__name__) from exc
        where = (
            " (or set LOOPBUS_DATA_DIR to the data directory `loopbus up` printed)"
            if creds is None
            else ""
        )
        raise BusError(
            f"NATS at {url} refused {_whose(creds)}; pass --creds FILE (or set "
            "LOOPBUS_CREDS) with a credential that `loopbus up` or `loopbus creds add` made "
            f"for this server{where}"
        ) from exc
    bus = Bus(nc, url, reconnects=reconnects, backoff=backoff, creds=creds)
    bus.violations = violations
    return bus


async def _drain(sub: Any) -> None:
    """Drain one subscription. Whatever goes wrong is swallowed, as in the rest of ``close``:
    one already closed, or on a connection already closing, has nothing left to drain, and
    an exception left in the task would itself be printed when it is collected."""
    with contextlib.suppress(Exception):
        await sub.drain()


def _whose(creds: Credential | None) -> str:
    if creds is None:
        return "a connection without credentials"
    where = f" from {creds.path}" if creds.path else ""
    return f"the {creds.role} credential{where}"


class Bus:
    """A connection to the loopbus log. Create with :func:`connect`; close with :meth:`close`."""

    def __init__(
        self,
        nc: NatsClient,
        url: str,
        *,
        reconnects: Reconnects | None = None,
        backoff: Backoff = DAEMON_BACKOFF,
        creds: Credential | None = None,
    ):
        self.nc = nc
        self.url = url
        self.creds = creds
        """The credential this connection authenticated with (``None``: no auth)."""
        self.violations = Violations()
        self.js: JetStreamContext = nc.jetstream(timeout=ACK_TIMEOUT)
        # The calls that retry (stream info, gets, KV) give each try less time: a try that
        # hangs through a failover is better abandoned and repeated on the new leader.
        self._js_try: JetStreamContext = nc.jetstream(timeout=ATTEMPT_TIMEOUT)
        self.reconnects = reconnects or Reconnects()
        """Reconnections so far; readers listen to it (see :class:`Reconnects`)."""
        self.backoff = backoff
        """How long calls ride through a restart or failover before raising (``retry``)."""
        self.wire = Wire(nc)

    async def close(self) -> None:
        """Drain (the subscriptions' pending messages handled, the outbound flushed), but for
        about ``CLOSE_DRAIN_S`` at most, drains and flush together (plus up to
        ``CANCEL_GRACE_S`` for drains that must be cancelled): nats-py waits up to 30 s for a
        subscription that does not drain, and a command ended by Ctrl-C must not wait that
        long. What is published is acknowledged before ``publish`` returns, so nothing of
        ours is lost by cutting it. A close that is itself cancelled still closes.

        Each subscription is drained here rather than by ``nc.drain()``: cutting that one
        short leaves a future with an exception nobody reads (its gather of the
        subscriptions' drains), which asyncio prints with a traceback when it is collected,
        so a daemon stopped by Ctrl-C could end with one on its stderr."""
        nc = self.nc
        if nc.is_closed:
            return
        deadline = asyncio.get_running_loop().time() + CLOSE_DRAIN_S
        subscriptions = list(getattr(nc, "_subs", {}).values())
        drains = [asyncio.ensure_future(_drain(sub)) for sub in subscriptions]
        try:
            undrained = (await asyncio.wait(drains, timeout=CLOSE_DRAIN_S))[1] if drains else ()
            if not undrained:  # when a drain is stuck, so most likely is the flush
                with contextlib.suppress(Exception):
                    async with asyncio.timeout_at(deadline):
                        await nc.flush()
        finally:
            for task in drains:
                task.cancel()
            if drains:
                # Bounded: a cancel that nats-py swallows must not keep the close waiting.
                await asyncio.wait(drains, timeout=CANCEL_GRACE_S)
            with contextlib.suppress(Exception):
                await nc.close()

    async def __aenter__(self) -> Bus:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    # -- publishing ---------------------------------------------------------------------

    async def publish(self, event: Event) -> Ack:
        """Append one event. ``Nats-Msg-Id`` is the event id, so a retry is stored once."""
        return await self._publish(event, {Header.MSG_ID.value: event.id})

    async def publish_transition(self, event: Event, expected_last_subject_seq: int) -> Ack:
        """Append ``event`` only if its subject's last sequence is still the one we read.

        ``0`` means "nothing on this subject yet". Raises :class:`TransitionConflict` when
        another writer appended first.
        """
        headers = {
            Header.MSG_ID.value: event.id,
            Header.EXPECTED_LAST_SUBJECT_SEQUENCE.value: str(expected_last_subject_seq),
        }
        try:
            return await self._publish(event, headers)
        except PublishFailed as exc:
            if f"err_code={WRONG_LAST_SEQUENCE}" in exc.detail:
                raise TransitionConflict(subject_of(event), expected_last_subject_seq) from exc
            raise

    def check_publish(self, subject: str) -> None:
        """Raise :class:`PermissionDenied` when this connection's credential may not
        publish on ``subject`` (the server would refuse it; this says so at once)."""
        if self.creds is not None and not self.creds.permissions.may_publish(subject):
            raise PermissionDenied(
                self.creds.role,
                subject,
                f"it may publish {describe(self.creds.role, self.creds.principal)}",
            )

    def refused(self, subject: str) -> PermissionDenied | None:
        """The server's refusal of a publish on ``subject``, if it sent one."""
        if subject.lower() not in self.violations.subjects:
            return None
        role = self.creds.role if self.creds is not None else "anonymous"
        return PermissionDenied(role, subject, "the server refused it (permissions violation)")

    async def _publish(self, event: Event, headers: dict[str, str]) -> Ack:
        subject = subject_of(event)
        self.check_publish(subject)
        payload = encode_checked(event)

        async def attempt() -> Ack:
            try:
                ack = await self.js.publish(
                    subject, payload, timeout=ATTEMPT_TIMEOUT, headers=headers
                )
            except nats.js.errors.NoStreamResponseError:
                await self._require_log()  # no stream at all is not worth waiting for
                raise
            except TimeoutError:
                refusal = self.refused(subject)
                if refusal is not None:  # not worth retrying: the answer will not change
                    raise refusal from None
                raise
            return Ack(ack.seq, bool(ack.duplicate))

        try:
            # Repeating is safe: the server stores an id once. A repeat is acked as a
            # duplicate, except a transition's on a single server, which checks the
            # expected sequence first and answers a conflict: the caller re-reads and
            # finds its own event (a cluster checks the id first).
            return await retrying(attempt, f"publish to {subject}", self.backoff)
        except nats.js.errors.APIError as exc:
            raise PublishFailed(subject, f"{exc.description} (err_code={exc.err_code})") from exc
        except nats.errors.ConnectionClosedError as exc:
            raise PublishFailed(subject, "connection closed") from exc
        except ServerUnavailable as exc:
            raise PublishFailed(subject, str(exc)) from exc

    async def _require_log(self) -> None:
        """Raise :class:`LogNotProvisioned` when the server says there is no LOOP stream;
        return quietly when it does not answer either (a failover: keep retrying)."""
        try:
            await self._js_try.stream_info(LOG_STREAM)
        except nats.js.errors.NotFoundError as exc:
            raise LogNotProvisioned(self.url) from exc
        except TRANSIENT:
            return

    async def publish_many(self, events: Iterable[Event], window: int = DEFAULT_WINDOW) -> Acks:
        """Append many events with up to ``window`` acknowledgements outstanding.

        Each event is its own JetStream publish with ``Nats-Msg-Id`` = its id, so each gets
        its exact sequence, and nothing is lost or stored twice when some are sent again
        (see :mod:`bus.publisher`). Raises :class:`PublishFailed` when the server
        refuses one, or when nothing answers for the back-off budget.

        Events are checked as they are sent: one that would not decode back, or that this
        credential may not publish, ends the call there, after every event before it is
        stored; its error (``InvalidEvent``, ``PermissionDenied``, ``PublishFailed``)
        carries a note saying how many were. Publishing the corrected call again stores
        the rest, and acks the stored ones as duplicates.
        """
        batch = list(events)
        if not batch:
            return Acks([])
        return await Pipeline.of_events(self, batch, window).run()

    async def publish_atomic(self, events: Sequence[Event]) -> list[Ack]:
        """Append ``events`` as one JetStream atomic batch: a reader sees all or none.

        Raises :class:`BatchRefused` when the server did not commit the batch.
        """
        if not events:
            return []
        return await publish_atomic(self, events)

    # -- reading ------------------------------------------------------------------------

    async def last_subject_seq(self, subject: str) -> int:
        """Stream sequence of the last message on ``subject`` (0 when there is none)."""
        try:
            msg = await retrying(
                lambda: self._js_try.get_last_msg(LOG_STREAM, subject),
                f"last message on {subject}",
                self.backoff,
            )
        except nats.js.errors.NotFoundError:
            return 0
        return int(msg.seq or 0)

    async def stream_last_seq(self) -> int:
        """The log's last sequence right now."""
        info = await self.stream_info()
        return int(info.state.last_seq)

    async def stream_info(self) -> Any:
        try:
            return await retrying(
                lambda: self._js_try.stream_info(LOG_STREAM),
                f"stream info {LOG_STREAM}",
                self.backoff,
            )
        except nats.js.errors.NotFoundError as exc:
            raise LogNotProvisioned(self.url) from exc

    async def get(self, seq: int) -> tuple[str, bytes]:
        """The subject and bytes stored at ``seq``."""
        msg = await retrying(
            lambda: self._js_try.get_msg(LOG_STREAM, seq),
            f"message {seq} of {LOG_STREAM}",
            self.backoff,
        )
        return str(msg.subject), bytes(msg.data or b"")

    async def bucket(self, name: str) -> Bucket:
        """An existing KV bucket (provisioned by :mod:`bus.provision`) whose calls
        ride through a restart or failover (see :mod:`bus.retry`)."""
        try:
            kv = await retrying(
                lambda: self._js_try.key_value(name), f"bucket {name}", self.backoff
            )
        except nats.js.errors.BucketNotFoundError as exc:
            raise LogNotProvisioned(self.url) from exc
        return Bucket(name, RetryingKeyValue(kv, self.backoff), check=self.check_publish)
