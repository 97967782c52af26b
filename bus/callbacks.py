"""What nats-py tells a connection through its callbacks, kept for the connection's calls.

Apart from :mod:`bus.connection` so that module stays one sitting's read: these classes
only record what ``error_cb``, ``reconnected_cb`` and ``disconnected_cb`` report.
"""

from __future__ import annotations

from collections.abc import Callable

from bus.retry import note


class Violations:
    """The subjects the server refused this connection's publishes on (from ``error_cb``).

    nats-server answers a forbidden publish with an asynchronous ``-ERR``; the publish
    itself only times out. The subject is kept so the waiting publish can fail at once
    with a clear line.
    """

    MARK = "permissions violation for publish to "

    def __init__(self) -> None:
        self.subjects: set[str] = set()
        self.unauthorized = False
        """The server refused the credential (a reconnecting client only times out)."""

    def note(self, message: str) -> None:
        lowered = message.lower()
        if "authorization" in lowered:
            self.unauthorized = True
        at = lowered.find(self.MARK)
        if at >= 0:
            # nats-py hands the server's line on lower-cased: compare subjects that way.
            self.subjects.add(lowered[at + len(self.MARK) :].strip().strip("\"'"))


class Reconnects:
    """Counts the client's reconnections and tells every listener the moment one happens.

    An ephemeral consumer lives in one server's memory; when the client comes back after a
    server restart, the consumers its readers used are gone. Readers listen here so they
    re-create theirs at once rather than after a silence timeout.
    """

    def __init__(self) -> None:
        self.count = 0
        self._listeners: list[Callable[[], None]] = []

    def listen(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` (synchronously, in the event loop) on every reconnection;
        returns the function that stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    async def reconnected(self) -> None:
        self.count += 1
        note("bus.reconnected", reconnects=self.count)
        for listener in list(self._listeners):
            listener()

    async def disconnected(self) -> None:
        note("bus.disconnected")
