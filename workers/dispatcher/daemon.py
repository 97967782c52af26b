"""The dispatcher: turns plan claims into facts and runs each accepted slice wave by wave.

A daemon on the kernel. It folds the ``slices`` and ``units`` projections; its decision
(:func:`workers.dispatcher.decide.decide`, pure) answers plan submissions, routes
the operator's misaligned findings, plans units, tries a failed unit again along the
ladder while its slice's budget allows (:mod:`.retries`), holds the dependents of a failed
unit, completes run-record entries, dispatches units up to ``capacity`` and closes settled
slices. This module is its shell: the effects the decision asks for read the project's
repository (trunk's pending criteria and commit, a unit's configured commands and changed
files) or boot trunk through the gate runner, and report what they found as observations
the decision then uses. See docs/plans.md.

Restart safety comes from the log: every answer names what it answers and carries an id
derived from it, and the folds skip what is answered; slice facts are conditional on the
slice subject and holds on the unit subject, as the decision saw them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, assert_never

import structlog

from bus import Bus
from projections import (
    blocking,
    charter,
    contract_landing,
    decisions,
    shipping,
    slices,
)
from projections import gates as gates_fold
from projections import units as units_fold
from projections import verify as verify_fold
from projections import wave_review as wave_fold
from projections.ship import ShipRules
from workers.dispatcher import retries
from workers.dispatcher.decide import (
    DEFAULT_CAPACITY,
    Options,
    TrunkRead,
    boot_name,
    decide,
    reads_name,
)
from workers.dispatcher.effects import (
    Boot,
    DispatcherEffect,
    DispatcherIntent,
    ReadCriteria,
    ReadTrunk,
    ReadUnit,
)
from workers.dispatcher.name import NAME
from workers.dispatcher.repo import ProjectRepo
from workers.errors import WorkerError
from workers.gates.runner import GateRunner
from workers.gates.signing import Signer
from workers.kernel import Daemon, Kernel, World

log = structlog.get_logger()

READINGS_KEPT = 32
"""Repository readings kept per project for the decision (it takes one step at a time, so
only the latest few can still be wanted)."""


class Dispatcher(Daemon[DispatcherEffect]):
    """Plans become facts, slices run wave by wave, increments boot."""

    name = NAME
    folds = (
        slices.FOLD,
        units_fold.FOLD,
        decisions.FOLD,
        blocking.FOLD,
        *retries.FOLDS,
        charter.FOLD,  # dispatch holds while a charter awaits approval or its run ended
        contract_landing.FOLD,
        verify_fold.FOLD,  # waves verified code-cold, verifier findings, SHIP verdicts
        wave_fold.FOLD,  # waves reviewed whole, units re-opened and re-reviewed
        gates_fold.FOLD,  # SHIP: is trunk green at the close, do the criteria pass on it
        shipping.FOLD,  # no dispatch while a credential in trunk's history is unsettled
    )

    def __init__(
        self,
        bus: Bus,
        *,
        repos: Mapping[str, ProjectRepo] | None = None,
        signer: Signer | None = None,
        capacity: int = DEFAULT_CAPACITY,
        paced: bool = True,
        projects: Sequence[str] = (),
        ship: Mapping[str, ShipRules] | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity={capacity} must be at least 1")
        super().__init__(projects=projects)
        self.bus = bus
        self.repos = dict(repos or {})
        self.signer = signer
        self.options = Options(
            capacity=capacity,
            paced=paced,
            repos=frozenset(self.repos),
            ship_rules=dict(ship or {}),
        )
        self.runners: dict[str, GateRunner] = {}
        self.readings: dict[str, dict[str, Any]] = {}
        self.kernel: Kernel[DispatcherEffect] | None = None

    def repo_for(self, project: str) -> Path | None:
        repo = self.repos.get(project)
        return repo.path if repo is not None else None

    async def start(self, kernel: Kernel[DispatcherEffect]) -> None:
        self.kernel = kernel  # effects report what they read through it

    def decide(self, world: World) -> Sequence[DispatcherIntent]:
        return decide(world, self.options)

    async def perform(self, effect: DispatcherEffect) -> Sequence[DispatcherIntent]:
        repo = self.repos[effect.project]
        reading: Any
        match effect:
            case ReadCriteria():
                reading = await asyncio.to_thread(repo.criteria)
            case ReadTrunk():
                reading = TrunkRead(await asyncio.to_thread(self._trunk, repo))
            case ReadUnit(base=base, head=head):
                reading = await asyncio.to_thread(repo.unit_reads, base, head)
            case Boot(accepted=accepted):
                booted = await repo.boot(self._runner(effect.project, repo))
                outcome = booted.result.outcome
                log.info("slice.booted", project=effect.project, outcome=outcome)
                self._observe(boot_name(effect.project, accepted), effect.project, booted.result)
                # The kernel publishes these before it decides for the project again, so
                # the close that names the boot result comes after it on the log.
                return booted.records
            case _:
                assert_never(effect)
        self._remember(effect.project, effect.key, reading)
        return ()

    @staticmethod
    def _trunk(repo: ProjectRepo) -> str | None:
        try:
            return repo.trunk_commit().commit
        except WorkerError as exc:
            log.warning("dispatch.no_base", repo=str(repo.path), error=str(exc))
            return None

    def _runner(self, project: str, repo: ProjectRepo) -> GateRunner | None:
        runner = self.runners.get(project)
        if runner is None and self.signer is not None:
            runner = self.runners[project] = GateRunner(
                self.bus,
                repo.path,
                self.signer,
                principal=self.actor.principal,
                jobs=1,
                project=project,
            )
        return runner

    def _remember(self, project: str, key: str, reading: Any) -> None:
        kept = self.readings.setdefault(project, {})
        kept[key] = reading
        while len(kept) > READINGS_KEPT:
            del kept[next(iter(kept))]
        self._observe(reads_name(project), project, dict(kept))

    def _observe(self, name: str, project: str, value: Any) -> None:
        assert self.kernel is not None, "effects run only once the kernel has started"
        self.kernel.observe(name, value, project=project)
