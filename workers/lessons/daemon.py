"""The lessons daemon: a closed slice's lessons on the log, recurring lessons (across a
project's slices, or across projects) drafted as gates through the ratchet, and the
slice's unit branches collapsed at closeout.

``decide`` is :func:`.decide.decide` (pure); the one effect, closeout, is git work in the
project's repository (:mod:`.closeout`) answered by a ``slice.closed_out.v1`` fact.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import assert_never

from projections import lessons, lessons_across, ratchet
from projections.intents import Publish
from projections.lessons import LESSON_GATE_PREFIX
from schemas import Actor, Event
from schemas.ids import answer_id
from schemas.lessons import LessonsRecorded, SliceClosedOut
from schemas.ratchet import CATALOGUE, GateProposed
from workers.kernel import Daemon, World
from workers.lessons import closeout
from workers.lessons.decide import decide
from workers.lessons.effects import CLOSEOUT, CloseOut, LessonsEffect, LessonsIntent


class Lessons(Daemon[LessonsEffect]):
    name = "lessons"
    folds = (lessons.FOLD, ratchet.FOLD, lessons_across.FOLD)

    def __init__(
        self,
        *,
        repo: Path | None = None,
        trunk: str = "main",
        units_dir: Path | None = None,
        aggregate: str = CATALOGUE,
        projects: Sequence[str] = (),
        actor: Actor | None = None,
    ) -> None:
        super().__init__(projects=projects, actor=actor)
        self.repo, self.trunk, self.units_dir = repo, trunk, units_dir
        self.aggregate = aggregate

    def also_folds_into(self, event: Event) -> Sequence[str]:
        """Every project's lesson records and lesson gates also go to the aggregate, which
        finds the classes recurring across projects."""
        if event.project == self.aggregate or event.actor.role != "system":
            return ()
        if isinstance(event, LessonsRecorded) or (
            isinstance(event, GateProposed) and event.gate.startswith(LESSON_GATE_PREFIX)
        ):
            return (self.aggregate,)
        return ()

    def decide(self, world: World) -> Sequence[LessonsIntent]:
        return decide(world, has_repo=self.repo is not None, aggregate=self.aggregate)

    async def perform(self, effect: LessonsEffect) -> Sequence[LessonsIntent]:
        match effect:
            case CloseOut():
                return await self._close_out(effect)
            case _:
                assert_never(effect)

    async def _close_out(self, effect: CloseOut) -> Sequence[LessonsIntent]:
        assert self.repo is not None  # decide asks for a close-out only with a repository
        slice_id, closed = effect.slice, effect.closed
        hygiene = await asyncio.to_thread(
            closeout.close_out,
            self.repo,
            self.trunk,
            effect.project,
            list(effect.units),
            self.units_dir,
        )
        return [
            Publish(
                SliceClosedOut(
                    id=answer_id(closed, CLOSEOUT),
                    project=effect.project,
                    actor=self.actor,
                    slice=slice_id,
                    closed=closed,
                    trunk=hygiene.trunk,
                    deleted=hygiene.deleted,
                    removed=hygiene.removed,
                    kept=hygiene.kept,
                    branches=hygiene.branches,
                    worktrees=hygiene.worktrees,
                    problem=hygiene.problem,
                )
            )
        ]
