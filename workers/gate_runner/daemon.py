"""The gate-runner daemon: runs a repository's gates whenever the log asks for them.

A daemon on the kernel. It serves one project (the ``[project] id`` of the repository's
``HEAD`` config, or ``--project``) and answers every ask — a unit's accepted commit, or a
:class:`GateRunRequested` from anyone (the merger asks for trunk candidates this way when
it does not call :class:`workers.gates.runner.GateRunner` itself) — with a signed
:class:`GateSuiteCompleted` whose ``cause`` is the asking event's id. It also raises one
finding for every gate event the ``gates`` projection refused (a missing, unknown or forged
signature), asks for the gates of each new commit the trunk ref points at, and keeps a
standing finding open while this host runs checks unfenced (:mod:`workers.gates.unfenced`).

The decision (:mod:`workers.gate_runner.decide`) is pure; this module is its
shell: the effect that runs a suite through the gates library (which signs it, answers
from the cache, and returns the batches that record it: the kernel publishes them), and
the sensor that watches trunk: it polls the ref, and reads it at once when the log says
trunk advanced or was reverted (with ``--repo`` a URL, the kernel has fetched the mirror
by then, so a merger on another machine wakes this runner without waiting for a poll).
Restart-safe without a checkpoint of its own: the fold says which asks a verified suite
answers, and the refusal findings and trunk requests carry ids derived from what they answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any, assert_never

import structlog

from bus import BusError, Record
from projections import FoldFailure, findings, leases, ratchet
from schemas import Event
from schemas.ids import new_id
from schemas.merges import MergeReverted, TrunkAdvanced
from schemas.ratchet import CATALOGUE, GateMoved
from schemas.subjects import (
    charter_approved_subjects,
    finding_subjects,
    gate_request_subjects,
    gate_subjects,
    gate_suite_subjects,
    lease_subjects,
    ratchet_subjects,
    slice_subjects,
    trunk_subject,
    unit_subjects,
)
from workers import repository
from workers.errors import GateError, WorkerError
from workers.gate_runner.deadline import suite_deadline
from workers.gate_runner.decide import FOLD, TRUNK, TrunkSeen, decide
from workers.gate_runner.effects import GateRunnerEffect, GateRunnerIntent, Job, RunSuite
from workers.gates import unfenced
from workers.gates.runner import GateRunner, SuiteResult
from workers.gates.unitgate import gate_unit
from workers.kernel import Daemon, Kernel, World
from workers.kernel.lease_holding import answered_under_lease
from workers.leases.decide import Policy, holder_name

log = structlog.get_logger()

RETRIES = 3
RETRY_FIRST_S = 1.0


class GateRunnerDaemon(Daemon[GateRunnerEffect]):
    """Keeps every ask of one project answered, and trunk gated."""

    name = "gate-runner"
    # Its replicas split asks and check runs by item leases, not by projects.
    shares_projects = False
    folds = (FOLD, ratchet.FOLD, findings.FOLD, leases.FOLD)

    def __init__(
        self,
        runner: GateRunner,
        project: str,
        *,
        jobs: int = 2,
        trunk: str | None = "HEAD",
        trunk_poll_s: float = 2.0,
        catalogue: str = CATALOGUE,
        lease_ttl_s: float | None = None,
        holder: str | None = None,
    ) -> None:
        super().__init__(projects=[project], actor=runner.actor)
        self.lease: Policy | None = None
        if lease_ttl_s is not None:  # replicas split the asks, each run by one of them
            named = holder or holder_name(runner.actor)  # one name for all its leases
            self.lease = Policy(named, lease_ttl_s, max(jobs, 1))
            self.tick_s = lease_ttl_s / 3  # notice a lapsed lease without a new event
        self.catalogue = catalogue
        self.runner = runner
        self.project = project
        self.jobs = max(jobs, 1)
        self.trunk = trunk
        self.trunk_poll_s = trunk_poll_s
        self.kernel: Kernel[GateRunnerEffect] | None = None
        self.trunk_moved = asyncio.Event()
        """Set when trunk's advance or revert is folded: the watch reads the ref now
        rather than at its next poll (the kernel fetched a mirror lacking the commit)."""

    def subjects(self) -> list[str]:
        p = self.project
        return [
            unit_subjects(p),
            slice_subjects(p),
            gate_request_subjects(p),
            gate_suite_subjects(p),
            *gate_subjects(p),
            finding_subjects(p),  # every producer's, and their resolutions (unfenced)
            ratchet_subjects(p),
            ratchet_subjects(self.catalogue),
            charter_approved_subjects(p),  # the charter's test files are frozen for units
            lease_subjects(p, "gate"),
            trunk_subject(p),  # a move wakes the trunk watch (the mirror fetched first)
        ]

    def fold(self, states: dict[str, Any], record: Record) -> Sequence[FoldFailure]:
        if isinstance(record.event, TrunkAdvanced | MergeReverted):
            self.trunk_moved.set()
        return super().fold(states, record)

    def repo_for(self, project: str) -> Path | None:
        return self.runner.repo if project == self.project else None

    def also_folds_into(self, event: Event) -> Sequence[str]:
        """The catalogue's profile moves are read as this project's: a profile's state
        decides whether its checks block here."""
        return (self.project,) if isinstance(event, GateMoved) else ()

    async def start(self, kernel: Kernel[GateRunnerEffect]) -> None:
        self.kernel = kernel
        await self.runner.cache(self.project)  # its key goes on the log with the first suite
        fence = unfenced.Fence(await self.runner.fence_problem())
        kernel.observe(unfenced.FENCE, fence, project=self.project)
        if self.trunk is not None:  # the first asks taken are bounded too
            with contextlib.suppress(WorkerError):  # the trunk watch says it, every poll
                info = await asyncio.to_thread(repository.resolve, self.runner.repo, self.trunk)
                self._bound(info.config_text)
        if self.trunk is not None and self.trunk_poll_s > 0:
            kernel.spawn(self.watch_trunk(kernel, self.trunk), "trunk")

    def decide(self, world: World) -> Sequence[GateRunnerIntent]:
        return [*decide(world, self.jobs, self.lease), *unfenced.decide(world)]

    async def perform(self, effect: GateRunnerEffect) -> Sequence[GateRunnerIntent]:
        match effect:
            case RunSuite(job=job, advisory=advisory):
                # Under a lease, released after the suite's facts (the item is free again
                # only once its answer is on the log); nothing when another replica took it.
                work = self._run_suite(job, advisory)
                return await answered_under_lease(self.runner.bus, self.actor, effect, work)
            case _:
                assert_never(effect)

    async def _run_suite(
        self, job: Job, advisory: ratchet.Advisory | None
    ) -> Sequence[GateRunnerIntent]:
        """The suite's batches, for the kernel to publish: it decides again for the project
        only once it has folded them back (its barrier), so the ask is not run twice."""
        structlog.contextvars.bind_contextvars(cause=job.cause, commit=job.commit, unit=job.unit)
        suite = await self._run(job, advisory)
        log.info("gate.suite", outcome=suite.outcome, error=suite.error or None)
        return suite.intents

    async def _run(self, job: Job, advisory: ratchet.Advisory | None) -> SuiteResult:
        """The suite, tried up to ``RETRIES`` times; a bus failure is the kernel's to retry.
        Which gates only report the decision read from the ratchet fold."""
        delay = RETRY_FIRST_S
        for attempt in range(1, RETRIES + 1):
            try:
                if job.scope is not None and job.unit is not None:
                    return await gate_unit(
                        self.runner,
                        job.commit,
                        unit=job.unit,
                        cause=job.cause,
                        scope=job.scope,
                        trunk=self.trunk,
                        force=job.force,
                    )
                return await self.runner.evaluate(
                    job.commit,
                    checks=job.checks,
                    unit=job.unit,
                    reason=job.reason,
                    cause=job.cause,
                    force=job.force,
                    advisory=advisory,
                )
            except (BusError, asyncio.CancelledError):
                raise
            except Exception as exc:  # one job never stops the runner: retry, then give up
                log.warning("gate.suite_failed", attempt=attempt, error=repr(exc))
                if attempt == RETRIES:
                    raise GateError(
                        f"suite for {job.commit} abandoned after {RETRIES} tries: {exc!r}"
                    ) from exc
                await asyncio.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def _bound(self, config_text: str | None) -> None:
        """Every gate run taken from here on is given up past trunk's suite deadline."""
        deadline = suite_deadline(config_text)
        if self.lease is not None and deadline is not None:
            self.lease = dataclasses.replace(self.lease, deadlines={self.project: deadline})

    async def watch_trunk(self, kernel: Kernel[GateRunnerEffect], ref: str) -> None:
        """Report each new commit ``ref`` points at (an advance by the merger, a revert, or
        an outside push); the decision asks for its gates unless a suite or an ask exists."""
        seen: str | None = None
        while True:
            try:
                info = await asyncio.to_thread(repository.resolve, self.runner.repo, ref)
            except WorkerError as exc:
                log.warning("gate.trunk_unreadable", ref=ref, error=str(exc))
            else:
                if info.commit != seen:
                    seen = info.commit
                    self._bound(info.config_text)
                    log.info("gate.trunk_moved", commit=info.commit)
                    kernel.observe(TRUNK, TrunkSeen(info.commit, new_id()), project=self.project)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.trunk_moved.wait(), self.trunk_poll_s)
            self.trunk_moved.clear()
