"""The charter daemon's shell: the folds it keeps, how often it looks at the clock, and
what it reads from git.

Everything it does is publishing what :func:`workers.charter.decide.decide`
decides; time-based steps (check-in, finalizing, the wall clock's end) are decided at
least every ``tick_s`` seconds. The clock is the kernel's, so a test injects its own. For
a project whose repository it is given (``configs``), it reads criterion tests and
``loopbus.toml`` from git when the decision asks (:mod:`.reading`), and hands the reading
back through the kernel's ``outside``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import assert_never

import structlog

from projections import charter, gates, merges
from workers.agents.config import RepoConfig
from workers.charter.decide import Options, decide
from workers.charter.effects import CharterEffect, CharterIntent, ReadCriteria
from workers.charter.reading import read, reading_key
from workers.kernel import Daemon, Kernel, World

log = structlog.get_logger()

DEFAULT_TICK_S = 5.0
KEEP_READINGS = 8
"""Readings kept per project: the decision only asks about the latest trunk commits."""


class CharterDaemon(Daemon[CharterEffect]):
    """Charters approved, criteria pinned and judged on trunk, run budgets kept."""

    name = "charter"
    folds = (charter.FOLD, merges.FOLD, gates.FOLD)

    def __init__(
        self,
        *,
        projects: Sequence[str] = (),
        tick_s: float = DEFAULT_TICK_S,
        options: Options | None = None,
        configs: Mapping[str, RepoConfig] | None = None,
    ) -> None:
        super().__init__(projects=projects)
        self.tick_s = tick_s
        self.options = options or Options()
        self.configs = dict(configs or {})
        self.kernel: Kernel[CharterEffect] | None = None
        self.readings: dict[str, list[str]] = {}

    async def start(self, kernel: Kernel[CharterEffect]) -> None:
        self.kernel = kernel

    def decide(self, world: World) -> Sequence[CharterIntent]:
        options = self.options
        reads = world.project in self.configs
        if reads != options.reads_repo:
            options = Options(options.check_in, options.finalize, reads_repo=reads)
        return decide(world, options)

    async def perform(self, effect: CharterEffect) -> Sequence[CharterIntent]:
        match effect:
            case ReadCriteria():
                return await self._read(effect)
            case _:
                assert_never(effect)

    async def _read(self, effect: ReadCriteria) -> Sequence[CharterIntent]:
        config = self.configs[effect.project]
        commit = effect.commit
        reading = await asyncio.to_thread(
            read, config.repo, commit, effect.tests, config.review.trunk
        )
        assert self.kernel is not None
        if reading.error:
            # Not a fact about the criteria: the decision asks again (after the next tick
            # or record), so a locked or half-fetched repository pins nothing wrongly.
            log.warning("charter.read_failed", commit=commit, error=reading.error)
            return ()
        key = reading_key(effect.project, commit)
        kept = self.readings.setdefault(effect.project, [])
        kept.append(key)
        for old in kept[:-KEEP_READINGS]:
            self.kernel.outside.pop(old, None)
        del kept[:-KEEP_READINGS]
        self.kernel.observe(key, reading, project=effect.project)
        return ()
