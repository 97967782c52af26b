"""Riding through a server restart or a cluster failover: retry, with back-off, what is
safe to repeat.

While a stream has no leader (a few seconds after its node dies) or a restarted server is
still recovering JetStream, requests get "no responders", a 503 or no answer at all. None
of those means the request was refused, so it is tried again, waiting 50 ms, then twice as
long each time up to 2 s, for at most :attr:`Backoff.budget` seconds in all; then the
caller gets a :class:`~bus.errors.BusError` that says what did not answer.

Repeating is safe for every call that uses this module: reads; publishes carrying a
``Nats-Msg-Id`` (the server stores a repeat once and acks it as a duplicate); KV puts
(the same value again); and KV creates and updates, whose callers already handle a
"wrong last sequence" answer, which is what a repeat of an applied one gets.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import nats.errors
import nats.js.errors
from nats.js.kv import KeyValue

from bus.cancel import raise_if_cancelled
from bus.errors import ServerUnavailable

T = TypeVar("T")


def note(event: str, **fields: Any) -> None:
    """Log an info line about the connection, only where an entry point configured logging.

    A daemon configures structlog and wants these lines in its log; a one-shot command
    does not configure it, and structlog's default would print them among its output.
    """
    # Only an entry point configures structlog, and it imports structlog to do so: a
    # command that never did need not pay for importing it (with `rich` installed,
    # structlog's import alone is a tenth of a second of start-up).
    structlog = sys.modules.get("structlog")
    if structlog is not None and structlog.is_configured():
        structlog.get_logger().info(event, **fields)


TRANSIENT: tuple[type[BaseException], ...] = (
    nats.errors.TimeoutError,  # no answer in time (nats-py's, a subclass of asyncio's)
    nats.errors.NoRespondersError,  # nobody serves the subject right now
    nats.js.errors.NoStreamResponseError,  # the same, for a JetStream publish
    nats.js.errors.ServiceUnavailableError,  # 503: JetStream not ready, no leader yet
    nats.errors.OutboundBufferLimitError,  # reconnecting, and the send buffer is full
    nats.errors.StaleConnectionError,
    nats.errors.ConnectionReconnectingError,
)
"""Failures that say "not now", never "no"."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """How long to keep trying, and how the waits between tries grow."""

    budget: float = 30.0
    first: float = 0.05
    cap: float = 2.0


async def retrying(
    call: Callable[[], Awaitable[T]],
    what: str,
    backoff: Backoff,
    *,
    transient: tuple[type[BaseException], ...] = TRANSIENT,
) -> T:
    """``await call()``, again after each transient failure, within ``backoff.budget``.

    Raises :class:`ServerUnavailable` naming ``what`` when the budget runs out; any other
    exception is the caller's, unchanged.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + backoff.budget
    delay = backoff.first
    attempts = 0
    while True:
        attempts += 1
        try:
            return await call()
        except transient as exc:
            left = deadline - loop.time()
            if left <= 0:
                raise ServerUnavailable(what, backoff.budget, attempts, exc) from exc
            note("bus.retrying", what=what, error=type(exc).__name__, wait_s=delay)
            raise_if_cancelled()  # a failed try may have swallowed the caller's cancel
            await asyncio.sleep(min(delay, left))
            delay = min(delay * 2, backoff.cap)


class RetryingKeyValue(KeyValue):
    """nats-py's ``KeyValue`` whose get, put, create, update and delete ride through a
    failover instead of raising (see the module docstring for why each is safe to repeat).

    It *is* a ``KeyValue``, so code written against nats-py's type keeps working.
    """

    def __init__(self, kv: KeyValue, backoff: Backoff):
        super().__init__(
            name=kv._name, stream=kv._stream, pre=kv._pre, js=kv._js, direct=kv._direct
        )
        self._backoff = backoff

    async def get(self, key: str, *args: Any, **kwargs: Any) -> KeyValue.Entry:
        return await retrying(
            lambda: super(RetryingKeyValue, self).get(key, *args, **kwargs),
            f"KV get {self._name}.{key}",
            self._backoff,
        )

    async def put(self, key: str, value: bytes, *args: Any, **kwargs: Any) -> int:
        return await retrying(
            lambda: super(RetryingKeyValue, self).put(key, value, *args, **kwargs),
            f"KV put {self._name}.{key}",
            self._backoff,
        )

    async def create(self, key: str, value: bytes, *args: Any, **kwargs: Any) -> int:
        return await retrying(
            lambda: super(RetryingKeyValue, self).create(key, value, *args, **kwargs),
            f"KV create {self._name}.{key}",
            self._backoff,
        )

    async def update(self, key: str, value: bytes, *args: Any, **kwargs: Any) -> int:
        return await retrying(
            lambda: super(RetryingKeyValue, self).update(key, value, *args, **kwargs),
            f"KV update {self._name}.{key}",
            self._backoff,
        )

    async def delete(self, key: str, *args: Any, **kwargs: Any) -> bool:
        return await retrying(
            lambda: super(RetryingKeyValue, self).delete(key, *args, **kwargs),
            f"KV delete {self._name}.{key}",
            self._backoff,
        )
