"""The lessons daemon: a closed slice's lessons on the log, recurring lessons drafted as
gates through the ratchet, and the slice's unit branches collapsed at closeout.

``decide`` is :func:`.decide.decide` (pure); the one effect, closeout, is git work in the
project's repository (:mod:`.closeout`) answered by a ``slice.closed_out.v1`` fact.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from loopbus.projections import lessons, ratchet
from loopbus.projections.intents import Effect, Intent, Publish
from loopbus.schemas import Actor
from loopbus.schemas.ids import answer_id
from loopbus.schemas.lessons import SliceClosedOut
from loopbus.workers.kernel import Daemon, World
from loopbus.workers.lessons import closeout
from loopbus.workers.lessons.decide import CLOSEOUT, decide


class Lessons(Daemon):
    name = "lessons"
    folds = (lessons.FOLD, ratchet.FOLD)

    def __init__(
        self,
        *,
        repo: Path | None = None,
        trunk: str = "main",
        units_dir: Path | None = None,
        projects: Sequence[str] = (),
        actor: Actor | None = None,
    ) -> None:
        super().__init__(projects=projects, actor=actor)
        self.repo, self.trunk, self.units_dir = repo, trunk, units_dir

    def decide(self, world: World) -> Sequence[Intent]:
        return decide(world, has_repo=self.repo is not None)

    async def perform(self, effect: Effect) -> Sequence[Intent]:
        assert effect.action == CLOSEOUT and self.repo is not None
        slice_id, closed = effect.args["slice"], effect.args["closed"]
        hygiene = await asyncio.to_thread(
            closeout.close_out,
            self.repo,
            self.trunk,
            effect.project,
            list(effect.args["units"]),
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
