"""The projector: folds the log into every projection and materialises each into KV.

It resumes from its own checkpoint (``bus.read``: a bounded pull consumer fed with batch
requests, faster than nats-py's own readers, see docs/performance.md), applies the folds,
and flushes dirty states when it catches up with the log or every ``flush_every`` events.
A message
that does not decode is quarantined exactly once (on its own subject, written with an
expected subject sequence of 0) and never stops the fold.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import msgspec
import structlog
from loopbus.bus import PROJECTION_BUCKET, Bus, Record, TransitionConflict, read
from loopbus.projections import FOLDS, Fold
from loopbus.schemas import Actor
from loopbus.schemas.quarantine import is_quarantine_subject, quarantine_record
from loopbus.workers.projector.materialise import (
    CHECKPOINT_KEY,
    decode_view,
    encode_view,
    state_key,
)
from loopbus.workers.runtime import DaemonContext
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

log = structlog.get_logger()

FLUSH_EVERY = 5_000
ACTOR = Actor(role="system", principal="projector")


class Rewind(Exception):
    """Raised when a view must be rebuilt: folding restarts at sequence 1."""


@dataclass
class _View:
    seq: int  # last stream sequence folded into this state
    state: Any
    dirty: bool = False


@dataclass
class Projector:
    """The folding core, separate from the daemon loop so tests can drive batch boundaries."""

    bus: Bus
    kv: KeyValue
    folds: tuple[Fold[Any], ...] = FOLDS
    checkpoint: int = 0
    views: dict[tuple[str, str], _View] = field(default_factory=dict)
    applied: int = 0

    @classmethod
    async def open(cls, bus: Bus) -> Projector:
        kv = await bus.kv(PROJECTION_BUCKET)
        projector = cls(bus=bus, kv=kv)
        try:
            entry = await kv.get(CHECKPOINT_KEY)
            projector.checkpoint = int(entry.value or b"0")
        except KeyNotFoundError:
            projector.checkpoint = 0
        return projector

    async def _view(self, project: str, fold: Fold[Any]) -> _View:
        key = (project, fold.name)
        view = self.views.get(key)
        if view is None:
            try:
                entry = await self.kv.get(state_key(project, fold))
            except KeyNotFoundError:
                seq, state = 0, fold.initial()
            else:
                try:
                    seq, state = decode_view(fold, entry.value or b"")
                except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                    # The stored view predates a change to the state's shape: rebuild it
                    # from the start of the log (the others skip what they already hold).
                    self.views[key] = _View(0, fold.initial(), dirty=True)
                    raise Rewind(f"{key[0]}.{key[1]}: {exc}") from exc
            view = self.views[key] = _View(seq, state)
        return view

    async def apply(self, record: Record) -> None:
        """Fold one record into every projection of its project (or quarantine it)."""
        if record.event is None:
            await self._quarantine(record)
            return
        event = record.event
        for fold in self.folds:
            view = await self._view(event.project, fold)
            if record.seq <= view.seq:
                continue  # already folded before a restart
            view.state = fold.apply(view.state, event)
            view.seq = record.seq
            view.dirty = True
        self.applied += 1

    async def flush(self, through_seq: int) -> None:
        """Write every dirty state, then the checkpoint (in that order: see materialise)."""
        for (project, name), view in self.views.items():
            if view.dirty:
                fold = next(f for f in self.folds if f.name == name)
                await self.kv.put(state_key(project, fold), encode_view(fold, view.seq, view.state))
                view.dirty = False
        if through_seq > self.checkpoint:
            await self.kv.put(CHECKPOINT_KEY, str(through_seq).encode())
            self.checkpoint = through_seq

    async def reset_checkpoint(self) -> None:
        """Fold again from sequence 1; persisted first, so a crash mid-rebuild resumes it."""
        await self.kv.put(CHECKPOINT_KEY, b"0")
        self.checkpoint = 0

    async def _quarantine(self, record: Record) -> None:
        if is_quarantine_subject(record.subject):
            # A broken quarantine record cannot be quarantined again; log it and move on.
            log.error("quarantine.record_undecodable", seq=record.seq, subject=record.subject)
            return
        event = quarantine_record(record.subject, record.seq, record.data, record.error, ACTOR)
        log.warning(
            "message.quarantined", seq=record.seq, subject=record.subject, reason=event.reason
        )
        with contextlib.suppress(TransitionConflict):  # already quarantined before a restart
            await self.bus.publish_transition(event, expected_last_subject_seq=0)


async def run(ctx: DaemonContext, flush_every: int = FLUSH_EVERY) -> None:
    """The daemon body: fold from the checkpoint for ever, flushing as it goes.

    Only a message that does not decode is set aside (quarantined). Any other failure
    while folding a good event stops the daemon *without* moving the checkpoint past it,
    so the supervisor restarts it on the same event: a fold defect is loud, never a
    silently missing event.
    """
    projector = await Projector.open(ctx.bus)
    start = projector.checkpoint + 1
    while True:
        log.info("projector.resuming", start=start)
        try:
            await _fold_from(ctx, projector, start, flush_every)
        except Rewind as why:
            log.warning("projector.rebuilding_view", view=str(why))
            await projector.reset_checkpoint()
            start = 1
            continue
        return


async def _fold_from(ctx: DaemonContext, projector: Projector, start: int, every: int) -> None:
    since_flush = 0
    async for record in read(ctx.bus, start_seq=start, follow=True):
        structlog.contextvars.bind_contextvars(seq=record.seq, subject=record.subject)
        try:
            await projector.apply(record)
        except Rewind:
            raise
        except Exception:
            log.exception("projector.apply_failed")
            raise
        ctx.last_seq = record.seq
        since_flush += 1
        if record.pending == 0 or since_flush >= every:
            await projector.flush(record.seq)
            since_flush = 0
