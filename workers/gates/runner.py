"""Running a commit's gates: the one code path the daemon, ``loopbus gate run`` and the merger
share.

For each check: compute the cache key ``(check, inputs, config_sha)`` from the commit's tree
without checking anything out; answer from the cache when a verified pass or fail exists;
otherwise check the tree out into a private temporary folder, run the command through an
executor, parse the output into a verdict, sign the result and return it with its findings
as one batch to publish atomically. Concurrent asks for the same key in one process share
one run. Finally a signed :class:`GateSuiteCompleted` records what the suite came to and
what it answered. The library publishes nothing: :meth:`GateRunner.evaluate` returns the
suite with the intents that record it, which a daemon's shell returns to its kernel (the
gate runner's, the merger's, the dispatcher's) and a command outside any daemon hands to
:func:`workers.kernel.oneshot.carry_out`, the kernel's own publishing.
Judged against a trunk commit, a candidate that changes what runs its tests (a conftest,
pytest settings, a plugin) also has its tests run with trunk's versions of those files.

Public API: ``suite = await GateRunner(bus, repo_path, signer).evaluate(sha)``, then hand
``suite.intents`` to a kernel (in order: a fact naming a result must come after them);
``suite.green``, ``suite.outcome``, ``suite.checks[i].cached``, ``suite.checks[i].findings``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import msgspec
import structlog

from bus import Bus
from projections.ratchet import Advisory
from schemas import Actor, Event
from schemas.findings import FindingClass
from schemas.gates import (
    SUITE_CRITERION,
    RunReason,
    cache_key,
    cache_key_digest,
)
from schemas.targets import RecordTarget
from workers import repository
from workers.errors import RepoError
from workers.gates import trunkside
from workers.gates.cache import GateCache
from workers.gates.config import CheckSpec, ProjectConfig
from workers.gates.execute import execute
from workers.gates.executors import (
    ContainerExecutor,
    Executor,
    RunOutput,
    SubprocessExecutor,
)
from workers.gates.fenced import FencedExecutor
from workers.gates.host_key import host_salt
from workers.gates.prepare import Prepared, Unjudgeable, prepare
from workers.gates.results import (
    CheckRun,
    SuiteResult,
    failed_suite_fact,
    finding_event,
    reraise,
    result_facts,
    suite_fact,
)
from workers.gates.signing import Signer
from workers.gates.verdicts import Finding, Verdict
from workers.remote import fetch_missing

log = structlog.get_logger()

RECENT = 256
"""Fresh results a runner remembers until the log has them (see ``GateRunner._recent``)."""

__all__ = ["CheckRun", "GateRunner", "SuiteResult"]
"""What other modules take from here (the records are built in :mod:`.results`)."""


class GateRunner:
    """Runs gates for commits of one repository, signing as ``signer``; ``bus`` is where it
    reads the gate cache (it publishes nothing)."""

    def __init__(
        self,
        bus: Bus,
        repo: Path,
        signer: Signer,
        *,
        principal: str = "gate-runner",
        jobs: int = 2,
        project: str | None = None,
        fenced: bool = True,
    ):
        self.bus = bus
        self.repo = Path(repo)
        self.signer = signer
        self.actor = Actor(role="system", principal=principal)
        self.project = project
        self._slots = asyncio.Semaphore(max(jobs, 1))
        self._caches: dict[str, GateCache] = {}
        self._opening = asyncio.Lock()
        self._inflight: dict[str, asyncio.Future[CheckRun]] = {}
        self._recent: OrderedDict[str, CheckRun] = OrderedDict()
        """This runner's latest fresh results (pass or fail), by project and cache key: a
        result handed to a kernel is not on the log yet, and a later ask in the meantime
        (trunk's run of the same check in the same suite) must not run it again."""
        self._subprocess = SubprocessExecutor()
        self._container = ContainerExecutor()
        self._fenced = FencedExecutor() if fenced else None
        self._fence_checked = False
        self._unfenced: str | None = None if fenced else "the gate runner was made unfenced"
        self.executions = 0  # commands actually run by this process (the benchmark reads it)

    async def _host_executor(self) -> Executor:
        """The sandboxed executor where the local agent sandbox can run here, else the
        plain subprocess (said once in the log, and by :mod:`.unfenced`'s standing finding):
        a check runs the agents' code."""
        if self._fenced is not None and not self._fence_checked:
            self._fence_checked = True
            problem = await self._fenced.available()
            if problem is not None:
                log.warning("gate.unfenced", reason=problem)
                self._fenced = None
                self._unfenced = problem
        return self._fenced or self._subprocess

    async def fence_problem(self) -> str | None:
        """Why checks run on this host unfenced (one line), or ``None`` when they run in
        the agent sandbox (probed once)."""
        await self._host_executor()
        return self._unfenced

    async def cache(self, project: str) -> GateCache:
        """The project's cache, opened on first use."""
        async with self._opening:
            cache = self._caches.get(project)
            if cache is None:
                cache = await GateCache(self.bus, project).open()
                self._caches[project] = cache
            return cache

    async def _key(self, project: str) -> list[tuple[Event, ...]]:
        """The batch registering this runner's key, when the log does not hold it yet."""
        cache = await self.cache(project)
        registration = cache.unregistered(self.signer.registration(project, self.actor))
        return [] if registration is None else [(registration,)]

    # -- the suite -----------------------------------------------------------------------

    async def evaluate(
        self,
        commit: str | None = None,
        *,
        checks: Sequence[str] = (),
        unit: str | None = None,
        reason: RunReason = "manual",
        cause: str | None = None,
        force: bool = False,
        trunk: str | None = None,
        criteria: Sequence[str] = (),
        advisory: Advisory | None = None,
        judge: str | None = None,
    ) -> SuiteResult:
        """Run (or answer from the cache) every configured check, or ``checks``, on ``commit``
        (``HEAD`` when ``None``), sign the suite fact, and return the suite with the batches
        that record it (``SuiteResult.batches``: published by the caller's kernel).

        ``trunk``: the commit whose configuration judges this one (the candidate's own
        ``loopbus.toml`` contributes only the allowed edits: ``criteria`` cleared from
        pending, new checks; see :mod:`.trunkconfig`), and whose tests must all still run
        on the candidate (one that vanished or is newly skipped fails the suite). When the
        candidate changes test infrastructure against it, its pytest and exit-code checks
        run again with trunk's versions of those files, and an outcome that differs fails
        the suite (see :mod:`.testinfra`).

        ``judge``: the text of the ``loopbus.toml`` that judges (the adopted configuration,
        see :mod:`schemas.adoption`), in place of ``trunk``'s own file; with
        ``trunk`` the candidate still adds only the allowed edits and must still run every
        test ``trunk`` runs (under ``judge``). Without ``trunk`` the commit's own file
        counts for nothing: ``judge`` alone configures the run.

        ``advisory`` names the gates the ratchet says do not block (read from the log by
        the caller): their checks run and report, and the suite's outcome leaves them out.

        A commit that does not exist or whose ``loopbus.toml`` is missing or invalid is an
        error suite (with ``config_error`` set for the latter), recorded when the project is
        known (the runner's own project, or the config's)."""
        started = time.monotonic()
        how = (unit, reason, cause, started)
        prepared = await self._prepare(commit, trunk, judge, criteria, checks, how)
        if isinstance(prepared, SuiteResult):
            return prepared
        info, base, config, specs = prepared

        runs = await asyncio.gather(
            *(self.run_check(config, spec, info, unit=unit, force=force) for spec in specs)
        )
        judged = trunkside.Judged()
        if base is not None and base.config_text is not None:
            checking = (self.run_check, self._swapped_run)
            commits = (info, base)
            judged = await trunkside.against_trunk(
                self.actor, checking, self.repo, config, commits, specs, runs, criteria, unit
            )
        trunk_runs, infra, comparisons = judged.trunk_runs, judged.infra, judged.comparisons
        quiet = advisory.checks(config.checks) if advisory is not None else set()
        beside = [*judged.vanished, *judged.rewritten]
        suite = suite_fact(
            self.signer, self.actor, config, info, runs, beside, quiet, unit, reason, cause, started
        )
        cache = await self.cache(config.project)
        reraised = reraise(self.actor, runs, unit, config.project)
        fresh = _records([*trunk_runs.values(), *runs])
        last: tuple[Event, ...] = (*reraised, *beside, suite)
        batches = [*await self._key(config.project), *fresh, last]
        cache.observe(suite)
        return SuiteResult(
            project=config.project,
            commit=info.commit,
            tree=info.tree,
            outcome=suite.outcome,
            checks=list(runs),
            suite=suite,
            infra=infra,
            comparisons=comparisons,
            beside=beside,
            batches=batches,
        )

    async def _prepare(
        self,
        commit: str | None,
        trunk: str | None,
        judge: str | None,
        criteria: Sequence[str],
        checks: Sequence[str],
        how: tuple[str | None, RunReason, str | None, float],
    ) -> SuiteResult | Prepared:
        """What :func:`.prepare.prepare` finds, or the error suite when it cannot."""
        unit, reason, cause, started = how
        with contextlib.suppress(RepoError):  # unreachable: judged on what was fetched
            await asyncio.to_thread(fetch_missing, self.repo, commit or "HEAD", trunk or "")
        found = await asyncio.to_thread(
            prepare, self.repo, self.project, commit, trunk, judge, criteria, checks
        )
        if not isinstance(found, Unjudgeable):
            return found
        failed = await self._failed_suite(
            found.commit, found.tree, found.why, unit, reason, cause, started, found.finding
        )
        failed.config_error = found.config_error
        return failed

    async def _execute(
        self,
        config: ProjectConfig,
        spec: CheckSpec,
        info: repository.CommitInfo,
        *,
        swap: tuple[str, Sequence[str]] | None = None,
    ) -> tuple[Verdict, RunOutput | None]:
        """One check on this host's executor (see :func:`.execute.execute`)."""
        executor = await self._host_executor()
        verdict, output = await execute(
            self.repo, executor, self._container, config, spec, info, swap=swap
        )
        if output is not None:
            self.executions += 1
        return verdict, output

    async def _swapped_run(
        self,
        config: ProjectConfig,
        spec: CheckSpec,
        info: repository.CommitInfo,
        trunk_tree: str,
        paths: Sequence[str],
    ) -> Verdict:
        """``spec`` on the candidate's checkout with ``paths`` as ``trunk_tree`` has them.
        Not recorded as a gate result: it judges nothing alone, and its tree is no commit's."""
        async with self._slots:
            verdict, _output = await self._execute(config, spec, info, swap=(trunk_tree, paths))
        return verdict

    async def refuse_suite(
        self,
        commit: str,
        tree: str,
        error: str,
        finding: Finding,
        *,
        unit: str | None,
        cause: str | None,
        criterion: str,
        cls: FindingClass,
    ) -> SuiteResult:
        """Answer ``cause`` with an error suite that ran nothing, and one finding saying why
        (a unit commit that breached its scope is not gated at all); unpublished, as
        :meth:`evaluate`'s."""
        return await self._failed_suite(
            commit,
            tree,
            error,
            unit,
            "unit" if unit else "manual",
            cause,
            time.monotonic(),
            finding,
            criterion=criterion,
            cls=cls,
        )

    async def _failed_suite(
        self,
        commit: str | None,
        tree: str | None,
        error: str,
        unit: str | None,
        reason: RunReason,
        cause: str | None,
        started: float,
        finding: Finding | None = None,
        *,
        criterion: str = SUITE_CRITERION,
        cls: FindingClass = "defect",
    ) -> SuiteResult:
        result = SuiteResult(
            project=self.project, commit=commit, tree=tree, outcome="error", error=error
        )
        if self.project is None:
            return result
        suite = failed_suite_fact(
            self.signer, self.actor, self.project, commit, tree, error, unit, reason, cause, started
        )
        cache = await self.cache(self.project)
        raised = finding or Finding(
            target=RecordTarget(id=f"commit:{commit or 'unknown'}"), severity="high", message=error
        )
        event = finding_event(
            self.actor, self.project, raised, criterion, unit, {"commit": commit}, cls=cls
        )
        result.batches = [*await self._key(self.project), (event, suite)]
        cache.observe(suite)
        result.suite = suite
        return result

    async def run_check(
        self,
        config: ProjectConfig,
        spec: CheckSpec,
        info: repository.CommitInfo,
        *,
        unit: str | None = None,
        force: bool = False,
    ) -> CheckRun:
        """One check on one commit: from the cache, from a run in flight, or run now."""
        inputs = await asyncio.to_thread(repository.inputs_digest, self.repo, info.tree, spec.reads)
        fenced = await self.fence_problem() is None
        salt = await asyncio.to_thread(host_salt, config, spec, fenced=fenced)
        config_sha = spec.config_sha(salt)
        key = cache_key(spec.id, inputs, config_sha)
        cache = await self.cache(config.project)
        if not force:
            hit = await cache.lookup(key)
            if hit is not None:
                return CheckRun(
                    spec.id, hit.result.outcome, True, hit.result, hit.findings, hit.seq
                )
            mine = self._recent.get(cache_key_digest(f"{config.project}|{key}"))
            if mine is not None:
                return _borrowed(spec.id, mine)
        flight_key = cache_key_digest(f"{config.project}|{key}|{force}")
        running = self._inflight.get(flight_key)
        if running is not None:
            return _borrowed(spec.id, await asyncio.shield(running))
        future: asyncio.Future[CheckRun] = asyncio.get_running_loop().create_future()
        self._inflight[flight_key] = future
        try:
            run = await self._run_fresh(config, spec, info, inputs, config_sha, unit)
            if run.outcome != "error":  # what the cache would serve, and only that
                self._recent[cache_key_digest(f"{config.project}|{key}")] = run
                while len(self._recent) > RECENT:
                    self._recent.popitem(last=False)
            future.set_result(run)
            return run
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved here, so an unshared failure is not logged as lost
            raise
        finally:
            del self._inflight[flight_key]

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
        """One fresh run, in a slot of its own (``slotted``: one the caller holds)."""
        async with contextlib.nullcontext() if slotted else self._slots:
            started = time.monotonic()
            verdict, output = await self._execute(config, spec, info)
            duration = time.monotonic() - started
        findings, result = result_facts(
            self.signer, self.actor, config, spec, info, (inputs, config_sha), unit, verdict
        )
        result = self.signer.sign(
            msgspec.structs.replace(
                result,
                duration_s=duration,
                cost=output.cost if output is not None else None,
                exit_code=output.exit_code if output is not None else None,
                executor=output.executor if output is not None else "subprocess",
            )
        )
        log.info(
            "gate.ran",
            check=spec.id,
            tree=info.tree,
            outcome=verdict.outcome,
            duration_s=round(duration, 3),
        )
        return CheckRun(
            spec.id, verdict.outcome, False, result, findings, None, (*findings, result)
        )


def _records(runs: Sequence[CheckRun]) -> list[tuple[Event, ...]]:
    """Each run's record, once: trunk's run of a check may be the candidate's own, borrowed."""
    return list({run.result.id: run.record for run in runs if run.record}.values())


def _borrowed(check: str, run: CheckRun) -> CheckRun:
    """Another suite's run of the same check, answering this one (cached: nothing ran for
    it). Its record goes along: the cache did not answer, so the log may not hold it yet,
    and the suite that ran it may never be published (a merger's candidate dropped from
    the stack), while a verdict naming this suite must never reach the log without it. The
    log stores a repeat once (same event ids)."""
    return CheckRun(check, run.outcome, True, run.result, run.findings, run.seq, run.record)
