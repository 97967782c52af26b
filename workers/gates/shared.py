"""A gate runner whose check runs are shared with the project's other runners: a check on
a tree and configuration already running on another runner is awaited, not run again
(:mod:`workers.kernel.lease_flights`). The gate-runner daemon's replicas share them, and so
does the merger's trunk runner: trunk's first commit is asked for by both at once (the
gate runner's trunk sensor and the merger's first trunk check), and a candidate the merger
tests may be a tree a unit's suite is running."""

from __future__ import annotations

from typing import Any

from schemas.gates import cache_key
from workers import repository
from workers.gates.config import CheckSpec, ProjectConfig
from workers.gates.runner import CheckRun, GateRunner
from workers.kernel.lease_flights import Flights

CHECK_MARGIN_S = 60.0
"""Beyond a check's own timeout: checking out the tree, waiting for a slot, the verdict."""


class SharedGateRunner(GateRunner):
    """:class:`GateRunner` with each check's run leased across runners."""

    def __init__(self, *args: Any, flights: Flights, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.flights = flights

    async def _run_fresh(
        self,
        config: ProjectConfig,
        spec: CheckSpec,
        info: repository.CommitInfo,
        inputs: str,
        config_sha: str,
        unit: str | None,
        slotted: bool = False,
    ) -> CheckRun:
        key = cache_key(spec.id, inputs, config_sha)
        cache = await self.cache(config.project)

        async def shared(since: int) -> CheckRun | None:
            hit = await cache.lookup(key)
            if hit is None or hit.seq <= since:
                return None  # none yet, or one from before the wait (a forced run's)
            return CheckRun(spec.id, hit.result.outcome, True, hit.result, hit.findings, hit.seq)

        def run() -> Any:
            parent = super(SharedGateRunner, self)._run_fresh
            return parent(config, spec, info, inputs, config_sha, unit, slotted=True)

        # The slot first, then the lease: a lease taken while queueing for a slot would
        # count the queue against the check's deadline (and overrun under load).
        deadline = spec.timeout_s + CHECK_MARGIN_S
        async with self._slots:
            return await self.flights.once(config.project, key, shared, run, deadline_s=deadline)
