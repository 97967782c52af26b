"""The projector: folds the log into every projection and materialises each into KV.

It is a daemon on the kernel like every other, with a fold step of its own: it keeps one
state per (project, projection) together with the last sequence folded into it, resumes
from its checkpoint, and skips, per state, what that state already holds (see
:mod:`loopbus.bus.views`). Its only decision is *flush*: write the dirty states, then the
checkpoint — every ``flush_every`` events while it replays history, and whenever it has
caught up. A message that does not decode is quarantined exactly once (on its own subject,
written with an expected subject sequence of 0); any other failure while folding a good
event stops the daemon without moving the checkpoint past it, so a fold defect is loud,
never a silently missing event.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog
from loopbus.bus import Bus, Record, Views, ViewUnreadable
from loopbus.projections import FOLDS, Fold, FoldFailure, apply_guarded
from loopbus.projections.intents import Effect, Intent, PublishIf
from loopbus.schemas import Actor, MessageQuarantined
from loopbus.schemas.ids import is_token
from loopbus.schemas.quarantine import is_quarantine_subject, quarantine_record
from loopbus.workers.kernel import Daemon, Kernel, World

log = structlog.get_logger()

FLUSH_EVERY = 5_000


@dataclass
class _View:
    seq: int  # last stream sequence folded into this state
    state: Any
    dirty: bool = False


@dataclass
class Projector:
    """The materialising core: states, their sequences, and how they reach KV."""

    views: Views
    folds: tuple[Fold[Any], ...] = FOLDS
    checkpoint: int = 0
    states: dict[tuple[str, str], _View] = field(default_factory=dict)
    applied: int = 0
    rebuild: bool = False
    """A stored view no longer decoded: fold again from sequence 1 (the others skip)."""

    @classmethod
    async def open(cls, views: Views, folds: tuple[Fold[Any], ...] = FOLDS) -> Projector:
        """Load the checkpoint and every stored view."""
        projector = cls(views=views, folds=folds)
        projector.checkpoint = await projector.views.checkpoint()
        by_name = {fold.name: fold for fold in folds}
        for key in await projector.views.bucket.keys():
            project, _, name = key.partition(".")
            fold = by_name.get(name)
            if fold is None or not is_token(project):
                continue
            try:
                stored = await projector.views.read(project, fold)
            except ViewUnreadable as exc:
                # The state's shape changed since it was written: rebuild this one view
                # from the start of the log; the others skip what they already hold.
                log.warning("projector.rebuilding_view", view=key, error=exc.detail)
                projector.states[(project, name)] = _View(0, fold.initial(), dirty=True)
                projector.rebuild = True
                continue
            if stored is not None:
                projector.states[(project, name)] = _View(*stored)
        if projector.rebuild:
            await projector.views.set_checkpoint(0)  # persisted first: a crash resumes it
            projector.checkpoint = 0
        return projector

    @property
    def resume_from(self) -> int:
        return self.checkpoint + 1

    def apply(self, record: Record) -> list[FoldFailure]:
        """Fold one decoded record into every projection of its project; a fold that raises
        skips it (the same rule as every daemon and ``replay``), and is returned."""
        event = record.event
        assert event is not None
        failures: list[FoldFailure] = []
        for fold in self.folds:
            view = self.states.get((event.project, fold.name))
            if view is None:
                view = self.states[(event.project, fold.name)] = _View(0, fold.initial())
            if record.seq <= view.seq:
                continue  # already folded before a restart
            view.state, failure = apply_guarded(fold, view.state, event)
            if failure is not None:
                failures.append(failure)
            view.seq = record.seq
            view.dirty = True
        self.applied += 1
        return failures

    @property
    def dirty(self) -> bool:
        return any(view.dirty for view in self.states.values())

    async def flush(self, through_seq: int) -> None:
        """Write every dirty state, then the checkpoint (in that order: see bus.views)."""
        by_name = {fold.name: fold for fold in self.folds}
        for (project, name), view in list(self.states.items()):
            if view.dirty:
                # Taken together, before the write's await: the seq always matches the state.
                seq, state = view.seq, view.state
                view.dirty = False
                try:
                    await self.views.write(project, by_name[name], seq, state)
                except BaseException:
                    view.dirty = True
                    raise
        if through_seq > self.checkpoint:
            await self.views.set_checkpoint(through_seq)
            self.checkpoint = through_seq


def quarantine_of(record: Record, actor: Actor) -> MessageQuarantined | None:
    """The quarantine fact for an undecodable record (``None`` for a broken quarantine
    record: it cannot be quarantined again)."""
    if is_quarantine_subject(record.subject):
        log.error("quarantine.record_undecodable", seq=record.seq, subject=record.subject)
        return None
    return quarantine_record(record.subject, record.seq, record.data, record.error, actor)


class ProjectorDaemon(Daemon):
    """The projector as a daemon: fold with :class:`Projector`, flush as its decision."""

    name = "projector"
    acts_during_replay = True

    def __init__(self, bus: Bus, *, flush_every: int = FLUSH_EVERY) -> None:
        super().__init__()
        self.bus = bus
        self.flush_every = flush_every
        self.core: Projector | None = None
        self.since_flush = 0
        self.at_end = False

    async def start(self, kernel: Kernel) -> None:
        self.core = await Projector.open(await Views.open(self.bus))
        kernel.start_seq = self.core.resume_from
        log.info("projector.resuming", start=kernel.start_seq)

    def fold(self, states: dict[str, Any], record: Record) -> Sequence[FoldFailure]:
        assert self.core is not None
        failures = self.core.apply(record)
        self.since_flush += 1
        self.at_end = record.pending == 0
        return failures

    def undecodable(self, record: Record) -> Sequence[Intent]:
        quarantine = quarantine_of(record, self.actor)
        if quarantine is None:
            return ()
        log.warning("message.quarantined", seq=record.seq, subject=record.subject)
        # Conditional on an empty subject: quarantined exactly once, across restarts too.
        return [PublishIf(quarantine, 0)]

    def decide(self, world: World) -> Sequence[Intent]:
        due = self.at_end or self.since_flush >= self.flush_every
        if self.core is None or not due or not self.core.dirty:
            return ()
        return [Effect("flush", world.project, "flush", {"through": world.folded})]

    async def perform(self, effect: Effect) -> Sequence[Intent]:
        assert self.core is not None
        self.since_flush = 0
        await self.core.flush(int(effect.args["through"]))
        return ()
