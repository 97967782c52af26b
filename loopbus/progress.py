"""Progress of a long command, as git shows it: one line on stderr, only on a terminal.

The line is redrawn in place (carriage return, erase to the end of the line) at most every
:data:`REDRAW_EVERY_S`, and erased when the work ends, so what the command prints on
stdout is never interleaved with it and a pipe or a log file never sees it.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Iterator
from typing import TextIO

REDRAW_EVERY_S = 0.1
_ERASE = "\r\x1b[K"


class Progress:
    """``label: unit done/total (pct) note · elapsed`` on stderr when it is a terminal."""

    def __init__(
        self, label: str, total: int | None = None, unit: str = "", stream: TextIO | None = None
    ):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.label = label
        self.total = total
        self.unit = unit
        self.done = 0
        self.note = ""
        self._started = time.monotonic()
        self._drawn_at = float("-inf")

    def update(self, done: int | None = None, note: str | None = None, force: bool = False) -> None:
        """Record progress; redraw when enough time has passed (or ``force``)."""
        if done is not None:
            self.done = done
        if note is not None:
            self.note = note
        if not self.enabled:
            return
        now = time.monotonic()
        if force or now - self._drawn_at >= REDRAW_EVERY_S:
            self._drawn_at = now
            self.stream.write(_ERASE + self.line(now))
            self.stream.flush()

    def advance(self, note: str | None = None) -> None:
        self.update(self.done + 1, note, force=True)

    def line(self, now: float | None = None) -> str:
        elapsed = (now if now is not None else time.monotonic()) - self._started
        count = f"{self.done:,}" if self.total is None else f"{self.done:,}/{self.total:,}"
        unit = f"{self.unit} " if self.unit else ""
        share = f" ({100 * self.done // self.total}%)" if self.total else ""
        note = f" {self.note}" if self.note else ""
        return f"{self.label}: {unit}{count}{share}{note} · {elapsed:.0f}s"

    def finish(self) -> None:
        """Draw the final count, then erase the line: the terminal is left as it was."""
        if self.enabled:
            self.update(force=True)
            self.stream.write(_ERASE)
            self.stream.flush()

    @contextlib.contextmanager
    def shown(self) -> Iterator[Progress]:
        self.update(force=True)
        try:
            yield self
        finally:
            self.finish()

    async def tick(self, every_s: float = 1.0) -> None:
        """Redraw every ``every_s`` so the elapsed time moves while nothing else does."""
        while self.enabled:
            await asyncio.sleep(every_s)
            self.update(force=True)
