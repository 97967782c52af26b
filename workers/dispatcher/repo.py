"""The dispatcher's shell on a project's repository: trunk, what trunk declares, a unit's
reads, and the increment's boot check.

Reading goes through :mod:`workers.repository` (commits, trees) and
:mod:`workers.gates.declared` (the configuration a commit carries), from the trunk
commit itself, never from a working tree, so the pending criteria a plan is checked
against are the ones trunk declares. The boot check is the ``[[check]]`` whose id is
``boot``; it is run by the gate runner (:class:`workers.gates.runner.GateRunner`)
on the trunk commit exactly as any check is — in a fresh checkout, with the executor its
``image`` asks for, judged by its ``parser``, signed, recorded and cached — and its three
outcomes are kept apart: pass, fail, and error for anything that could not be established
(no config, no ``boot`` check, could not start, timed out, killed, unreadable output).

Every method here except :meth:`ProjectRepo.boot` blocks (dulwich); the daemon runs them
in a thread.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from projections.intents import PublishBatch
from schemas.project_config import BOOT_CHECK
from schemas.slices import BootResult
from workers import repository
from workers.dispatcher.answers import Criteria
from workers.dispatcher.lines import lines_changed
from workers.dispatcher.record import UnitReads
from workers.errors import WorkerError
from workers.gates.declared import config_at, pending_criteria
from workers.gates.runner import GateRunner
from workers.repository import CommitInfo


@dataclass(frozen=True)
class Booted:
    """A boot check's result, and the intents that record its run (unpublished)."""

    result: BootResult
    records: tuple[PublishBatch, ...] = ()


@dataclass(frozen=True)
class ProjectRepo:
    """One project's repository and the ref that is its trunk."""

    path: Path
    trunk: str = "HEAD"

    def trunk_commit(self) -> CommitInfo:
        """Trunk's commit; :class:`workers.errors.RepoError` when unreadable."""
        return repository.resolve(self.path, self.trunk)

    def criteria(self) -> Criteria:
        """The pending criteria declared on trunk and where they were read, or why not."""
        try:
            info = self.trunk_commit()
            return Criteria(pending_criteria(config_at(info)), f"loopbus.toml@{info.commit}")
        except WorkerError as exc:
            return Criteria(problem=f"pending criteria cannot be read: {exc}")

    def unit_reads(self, base: str | None, head: str) -> UnitReads:
        """The checks configured at ``head`` (none when unreadable) and the files changed
        from ``base``."""
        try:
            configured = {spec.id: spec.command for spec in config_at(self.resolve(head)).checks}
        except WorkerError:
            configured = {}
        if base is None:
            return UnitReads(configured, files_unknown="no base and head commit to compare")
        try:
            # From where the unit's own change starts: a unit that merged trunk in to resolve
            # a conflict did not change what that merge brought.
            start = repository.unit_base(self.path, head, dispatched=base, trunk=self.trunk)
            files = repository.files_changed(self.path, start, head)
            return UnitReads(configured, files, lines=lines_changed(self.path, start, head))
        except WorkerError as exc:
            return UnitReads(configured, files_unknown=str(exc))

    def resolve(self, commit: str) -> CommitInfo:
        return repository.resolve(self.path, commit)

    async def boot(self, runner: GateRunner | None) -> Booted:
        """Run the boot check on the trunk commit through the gate runner; never raises.

        The run is the gate runner's like any other check's — its ``image`` picks the
        executor, its ``parser`` judges the run, the result is signed and answered from the
        gate cache when trunk's inputs have not changed — so the close can name the signed
        result; the intents that record it come back with it, for the dispatcher's kernel
        to publish before any close can name it. What cannot be established is error,
        including having no ``runner`` (no key to sign with) for a boot check that exists.
        """
        try:
            info = await asyncio.to_thread(self.trunk_commit)
        except WorkerError as exc:
            return Booted(BootResult(outcome="error", detail=str(exc)))
        try:
            spec = config_at(info).check(BOOT_CHECK)
        except WorkerError as exc:
            return Booted(
                BootResult(
                    outcome="error",
                    commit=info.commit,
                    detail=f"no boot check to run on trunk: {exc}",
                )
            )
        if runner is None:
            return Booted(
                BootResult(
                    outcome="error",
                    command=spec.command,
                    commit=info.commit,
                    detail="the dispatcher has no gate-runner key to sign the boot result "
                    "with; run it with --data-dir",
                )
            )
        suite = await runner.evaluate(info.commit, checks=[BOOT_CHECK], reason="trunk")
        if not suite.checks:
            failed = BootResult(
                outcome="error",
                command=spec.command,
                commit=info.commit,
                detail=f"the boot check could not be run: {suite.error}",
            )
            return Booted(failed, suite.intents)
        run = suite.check(BOOT_CHECK)
        result = run.result
        tail = ""
        if run.outcome != "pass":
            tails = [f.evidence.get("output_tail") for f in run.findings]
            tail = next((t for t in tails if isinstance(t, str) and t.strip()), "")[-1000:]
        booted = BootResult(
            outcome=run.outcome,
            command=spec.command,
            commit=info.commit,
            exit_code=result.exit_code,
            duration_s=round(result.duration_s, 3),
            detail="\n".join(part for part in (result.error or result.summary, tail) if part),
            result=result.id,
            cached=run.cached,
        )
        return Booted(booted, suite.intents)
