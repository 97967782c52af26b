"""The gate runner's effects: what its decision asks its shell to do.

One effect: run (or answer from the cache) the suite a :class:`Job` asks for. Its key is
the ask it answers, so asking again while it runs, or after a restart, runs it once.
"""

from __future__ import annotations

from typing import TypeAlias

import msgspec

from projections.intents import Effect, IntentOf
from projections.ratchet import Advisory
from schemas.gates import RunReason
from workers.gates.unitgate import UnitScope

RUN = "run-suite"
"""The key prefix of :class:`RunSuite` (the decision counts the suites in flight by it)."""


class Job(msgspec.Struct, frozen=True, kw_only=True):
    """One ask: run the gates of ``commit`` and answer ``cause``."""

    cause: str
    commit: str
    unit: str | None
    reason: RunReason
    checks: tuple[str, ...] = ()
    force: bool = False
    scope: UnitScope | None = None
    """For a unit's commit: what the plan gave the unit and where it was dispatched."""


class RunSuite(Effect, frozen=True, tag="gate_runner.run_suite.v1"):
    """Run ``job``'s suite; ``advisory``: the gates the ratchet says only report now."""

    job: Job
    advisory: Advisory | None = None

    @property
    def key(self) -> str:
        return f"{RUN}:{self.job.cause}"


GateRunnerEffect = RunSuite
"""Every effect the gate runner asks for (one today; a union as soon as there are two)."""

GateRunnerIntent: TypeAlias = IntentOf[GateRunnerEffect]
"""What the gate runner may ask for (``decide``, ``perform``): publishing, and its own effects."""
