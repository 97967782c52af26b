"""The projector daemon: folds the log into every projection and keeps KV live.

A daemon on the kernel like every other, with a fold step of its own (the
:class:`~workers.projector.core.Projector`) and a flusher beside it instead of a
decision. The flusher writes what has been folded whenever the reader has caught up with
the log (``pending == 0``) and, while it is behind, at least every ``interval`` seconds —
never more often than every ``gap`` seconds, so a steady stream of events is written in
small batches rather than one flush per event. ``status`` is then as old as one flush.
Far behind the log, the flushes come further apart (see :data:`BEHIND_RATE`).

A message that does not decode is quarantined exactly once (on its own subject, written
with an expected subject sequence of 0); a fold that raises on an event skips it for that
fold (the kernel records it).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any, Never

import structlog

from bus import Bus, BusError, Record, Views
from projections import FoldFailure
from projections.intents import PublishIf, Publishing
from schemas import Actor, MessageQuarantined
from schemas.quarantine import is_quarantine_subject, quarantine_record
from workers.kernel import Daemon, Kernel
from workers.projector.core import RECENT_EVERY_S, Projector

log = structlog.get_logger()

INTERVAL_S = 0.05
"""While behind the log, what has been folded is written at least this often."""
GAP_S = 0.02
"""Flushes start at least this far apart: what is folded meanwhile is written together
(a steady stream costs a few dozen small writes a second, not one write per event)."""
BEHIND_RATE = 20_000
"""While the reader is ``n`` events behind the log, what is folded is written at least
every ``n / BEHIND_RATE`` seconds (but no less often than every ``BEHIND_MAX_S``) rather
than every ``interval``: when the log runs ahead, each flush carries more events, so the
flushes' fixed cost (every touched view's summary, the checkpoint) does not eat the CPU
the folds need to catch up. A view that far behind is already ``n / rate`` seconds old."""
BEHIND_MAX_S = 0.25
RETRY_S = (0.2, 5.0)


def quarantine_of(record: Record, actor: Actor) -> MessageQuarantined | None:
    """The quarantine fact for an undecodable record (``None`` for a broken quarantine
    record: it cannot be quarantined again)."""
    if is_quarantine_subject(record.subject):
        log.error("quarantine.record_undecodable", seq=record.seq, subject=record.subject)
        return None
    return quarantine_record(record.subject, record.seq, record.data, record.error, actor)


class ProjectorDaemon(Daemon[Never]):
    """The projector as a daemon: fold with :class:`Projector`, flush beside the kernel."""

    name = "projector"
    # Every replica may write the views: a view is a fold of the log, the same from any.
    shares_projects = False
    acts_during_replay = True

    def __init__(
        self,
        bus: Bus,
        *,
        views: Views | None = None,
        interval: float = INTERVAL_S,
        gap: float = GAP_S,
    ) -> None:
        super().__init__()
        self.bus = bus
        self.views = views
        self.interval = interval
        self.gap = gap
        self.core: Projector | None = None
        self.kernel: Kernel[Never] | None = None
        self.at_end = False
        self.behind = 0
        """Events the reader had not delivered yet when the last one was folded."""
        self.folded = 0
        self.flushes = 0
        self._wake = asyncio.Event()
        self._moved = asyncio.Event()

    async def start(self, kernel: Kernel[Never]) -> None:
        self.kernel = kernel
        self.core = await Projector.open(self.views or await Views.open(self.bus))
        kernel.start_seq = self.core.resume_from
        log.info("projector.resuming", start=kernel.start_seq, flush=self.core.next_flush)
        kernel.spawn(self._flusher(), "projector-flusher")

    def fold(self, states: dict[str, Any], record: Record) -> Sequence[FoldFailure]:
        assert self.core is not None
        failures = self.core.apply(record)
        self._note(record)
        return failures

    def undecodable(self, record: Record) -> Sequence[Publishing]:
        self._note(record)
        quarantine = quarantine_of(record, self.actor)
        if quarantine is None:
            return ()
        log.warning("message.quarantined", seq=record.seq, subject=record.subject)
        # Conditional on an empty subject: quarantined exactly once, across restarts too.
        return [PublishIf(quarantine, 0)]

    def _note(self, record: Record) -> None:
        self.folded = record.seq
        self.behind = record.pending
        self.at_end = record.pending == 0
        self._moved.set()
        self._wake.set()

    @property
    def checkpoint(self) -> int:
        return self.core.checkpoint.seq if self.core is not None else 0

    def patience(self) -> float:
        """How long to fold before writing while behind the log (see :data:`BEHIND_RATE`)."""
        return min(max(self.interval, self.behind / BEHIND_RATE), max(self.interval, BEHIND_MAX_S))

    async def _flusher(self) -> None:
        """Write what was folded: at once when caught up, at least every ``interval``
        (longer far behind: :meth:`patience`) while behind, never twice within ``gap``."""
        loop = asyncio.get_running_loop()
        last = -self.gap
        delay = RETRY_S[0]
        while True:
            await self._wake.wait()
            began = loop.time()
            while not self.at_end and loop.time() - began < self.patience():
                self._moved.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.patience() - (loop.time() - began)):
                        await self._moved.wait()
            if loop.time() - last < self.gap:
                await asyncio.sleep(self.gap - (loop.time() - last))
            self._wake.clear()
            last = loop.time()
            try:
                await self.flush()
                if self.core is not None and self.core.recent_pending:
                    loop.call_later(RECENT_EVERY_S, self._wake.set)
            except BusError as exc:
                log.warning("projector.flush_failed", error=str(exc), retry_s=delay)
                self._wake.set()
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_S[1])
            else:
                delay = RETRY_S[0]

    async def flush(self) -> None:
        """Write what is folded now (the flusher calls this; so may a test)."""
        assert self.core is not None
        if self.core.dirty or self.core.recent_pending or self.folded > self.core.checkpoint.seq:
            await self.core.flush(self.folded)
            self.flushes += 1
