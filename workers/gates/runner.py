"""Running a commit's gates: the one code path the daemon, ``loopbus gate run`` and the merger
share.

For each check: compute the cache key ``(check, inputs, config_sha)`` from the commit's tree
without checking anything out; answer from the cache when a verified pass or fail exists;
otherwise check the tree out into a private temporary folder, run the command through an
executor, parse the output into a verdict, sign the result and publish it atomically with
its findings. Concurrent asks for the same key in one process share one run. Finally a
signed :class:`GateSuiteCompleted` records what the suite came to and what it answered.
Judged against a trunk commit, a candidate that changes what runs its tests (a conftest,
pytest settings, a plugin) also has its tests run with trunk's versions of those files.

Public API (for other daemons)::

    runner = GateRunner(bus, repo_path, signer)
    suite = await runner.run_commit(sha, reason="trunk")     # -> SuiteResult
    suite.green, suite.outcome, suite.checks[i].cached, suite.checks[i].findings
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from loopbus.bus import Bus
from loopbus.projections.ratchet import Advisory
from loopbus.schemas import Actor, FindingRaised
from loopbus.schemas.findings import FindingClass
from loopbus.schemas.gates import (
    SUITE_CRITERION,
    GateOutcome,
    GateResultRecorded,
    GateSuiteCompleted,
    RunReason,
    SuiteEntry,
    cache_key,
    cache_key_digest,
    worst,
)
from loopbus.schemas.targets import CheckTarget, CodeTarget, RecordTarget
from loopbus.workers import repository
from loopbus.workers.errors import CONFIG_FILE, ConfigError, RepoError
from loopbus.workers.gates.cache import GateCache
from loopbus.workers.gates.config import CheckSpec, ProjectConfig, parse_config
from loopbus.workers.gates.environment import interpreter_dir, pytest_env, scrubbed_env
from loopbus.workers.gates.executors import (
    ContainerExecutor,
    Executor,
    RunOutput,
    RunSpec,
    SubprocessExecutor,
    docker_reachable,
)
from loopbus.workers.gates.fenced import FencedExecutor
from loopbus.workers.gates.parsers import parse
from loopbus.workers.gates.signing import Signer
from loopbus.workers.gates.testinfra import (
    COMPARED,
    Comparison,
    InfraFile,
    check_change,
    compared_tests,
    describe,
    infra_files,
    outcome_changes,
)
from loopbus.workers.gates.trunkconfig import judged_config, vanished_tests
from loopbus.workers.gates.verdicts import Finding, Verdict

log = structlog.get_logger()

MAX_FINDINGS = 500
"""Findings published per result; past it, one summary finding stands for the rest (an
atomic batch holds at most 1000 messages)."""
EVIDENCE_TEXT_CAP = 4000


@dataclass
class CheckRun:
    """One check's answer for one commit."""

    check: str
    outcome: GateOutcome
    cached: bool
    result: GateResultRecorded
    findings: list[FindingRaised]
    seq: int | None = None

    @property
    def duration_s(self) -> float:
        return self.result.duration_s


@dataclass
class SuiteResult:
    """Every check's answer for one commit, and the suite fact that recorded it."""

    project: str | None
    commit: str | None
    tree: str | None
    outcome: GateOutcome
    checks: list[CheckRun] = field(default_factory=list)
    error: str = ""
    config_error: ConfigError | None = None
    suite: GateSuiteCompleted | None = None
    infra: list[InfraFile] = field(default_factory=list)
    """The test infrastructure the commit changed against trunk (judged against a trunk)."""
    comparisons: list[Comparison] = field(default_factory=list)
    """Each pytest check's run with trunk's test infrastructure, when ``infra`` is set."""
    beside: list[FindingRaised] = field(default_factory=list)
    """Findings that failed the suite beside its checks (test-vanished, test-rewritten)."""

    @property
    def green(self) -> bool:
        return self.outcome == "pass"

    def check(self, check_id: str) -> CheckRun:
        return next(run for run in self.checks if run.check == check_id)


class GateRunner:
    """Runs gates for commits of one repository, publishing to ``bus`` as ``signer``."""

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
        """The project's cache, opened (and this runner's key registered) on first use."""
        async with self._opening:
            cache = self._caches.get(project)
            if cache is None:
                cache = await GateCache(self.bus, project).open()
                await cache.ensure_key(self.signer.registration(project, self.actor))
                self._caches[project] = cache
            return cache

    # -- the suite -----------------------------------------------------------------------

    async def run_commit(
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
        (``HEAD`` when ``None``), record a signed suite fact, and return the suite.

        ``trunk``: the commit whose configuration judges this one (the candidate's own
        ``loopbus.toml`` contributes only the allowed edits: ``criteria`` cleared from
        pending, new checks; see :mod:`.trunkconfig`), and whose tests must all still run
        on the candidate (one that vanished or is newly skipped fails the suite). When the
        candidate changes test infrastructure against it, its pytest and exit-code checks
        run again with trunk's versions of those files, and an outcome that differs fails
        the suite (see :mod:`.testinfra`).

        ``judge``: the text of the ``loopbus.toml`` that judges (the adopted configuration,
        see :mod:`loopbus.schemas.adoption`), in place of ``trunk``'s own file; with
        ``trunk`` the candidate still adds only the allowed edits and must still run every
        test ``trunk`` runs (under ``judge``). Without ``trunk`` the commit's own file
        counts for nothing: ``judge`` alone configures the run.

        ``advisory`` names the gates the ratchet says do not block (read from the log by
        the caller): their checks run and report, and the suite's outcome leaves them out.

        A commit that does not exist or whose ``loopbus.toml`` is missing or invalid is an
        error suite (with ``config_error`` set for the latter); it is recorded on the log
        when the project is known (the runner's own project, or the config's).
        """
        started = time.monotonic()
        prepared = await self._prepare(
            commit, trunk, judge, criteria, checks, unit, reason, cause, started
        )
        if isinstance(prepared, SuiteResult):
            return prepared
        info, base, config, specs = prepared

        runs = await asyncio.gather(
            *(self.run_check(config, spec, info, unit=unit, force=force) for spec in specs)
        )
        vanished: list[FindingRaised] = []
        rewritten: list[FindingRaised] = []
        infra: list[InfraFile] = []
        comparisons: list[Comparison] = []
        if base is not None and base.config_text is not None:
            trunk_runs = await self._trunk_runs(base, specs)
            vanished = self._vanished(info, base, specs, runs, unit, trunk_runs)
            infra = await asyncio.to_thread(_infra_files, self.repo, base, info)
            if infra:  # only then: a second run of every pytest check is not free
                comparisons, rewritten = await self._compare_infra(
                    config, info, base, infra, specs, runs, trunk_runs, criteria, unit
                )
        quiet = advisory.checks(config.checks) if advisory is not None else set()
        beside = [*vanished, *rewritten]
        suite = self._suite(config, info, runs, beside, quiet, unit, reason, cause, started)
        cache = await self.cache(config.project)
        reraised = self._reraise(runs, unit, config.project)
        await self.bus.publish_atomic([*reraised, *beside, suite])
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
        )

    async def _prepare(
        self,
        commit: str | None,
        trunk: str | None,
        judge: str | None,
        criteria: Sequence[str],
        checks: Sequence[str],
        unit: str | None,
        reason: RunReason,
        cause: str | None,
        started: float,
    ) -> (
        SuiteResult
        | tuple[repository.CommitInfo, repository.CommitInfo | None, ProjectConfig, list[CheckSpec]]
    ):
        """The commit, the commit that judges it, and the configuration and checks to run;
        or the error suite (recorded) when one of them cannot be had."""
        try:
            info = await asyncio.to_thread(repository.resolve, self.repo, commit)
            base = (
                None
                if trunk is None
                else await asyncio.to_thread(repository.resolve, self.repo, trunk)
            )
        except RepoError as exc:
            return await self._failed_suite(None, None, str(exc), unit, reason, cause, started)
        if judge is not None and base is not None:
            base = dataclasses.replace(base, config_text=judge)
        if judge is None and (
            info.config_text is None or (base is not None and base.config_text is None)
        ):
            why = _no_config(info, base)
            return await self._failed_suite(
                info.commit, info.tree, why, unit, reason, cause, started
            )
        try:
            if judge is not None and base is None:
                config, specs = self._judging(judge, None, (), checks)
            else:
                config, specs = self._judging(info.config_text, base, criteria, checks)
        except ConfigError as exc:
            failed = await self._failed_suite(
                info.commit,
                info.tree,
                str(exc),
                unit,
                reason,
                cause,
                started,
                finding=_config_finding(exc, info.config_text or judge or ""),
            )
            failed.config_error = exc
            return failed
        return info, base, config, list(specs)

    def _judging(
        self,
        own_text: str | None,
        base: repository.CommitInfo | None,
        criteria: Sequence[str],
        checks: Sequence[str],
    ) -> tuple[ProjectConfig, list[CheckSpec]]:
        """The configuration a commit is judged with (trunk's plus the unit's allowed edits
        when ``base`` is given, else its own) and the checks to run. Raises ConfigError."""
        if base is not None and base.config_text is not None:
            config = judged_config(base.config_text, own_text, criteria)
        else:
            assert own_text is not None  # the caller refused a commit without one
            config = parse_config(own_text)
        if self.project is not None and config.project != self.project:
            raise ConfigError(
                "project.id", config.project, f"this runner serves project {self.project!r}"
            )
        return config, ([config.check(c) for c in checks] if checks else list(config.checks))

    def _suite(
        self,
        config: ProjectConfig,
        info: repository.CommitInfo,
        runs: Sequence[CheckRun],
        beside: Sequence[FindingRaised],
        quiet: set[str],
        unit: str | None,
        reason: RunReason,
        cause: str | None,
        started: float,
    ) -> GateSuiteCompleted:
        """The signed suite fact: worst of the blocking checks (advisory ones left out),
        failed outright by a finding raised beside them (a test that ran on trunk vanished,
        a test whose outcome the candidate's test infrastructure changed)."""
        entries = [
            SuiteEntry(
                check=run.check,
                outcome=run.outcome,
                cached=run.cached,
                result=run.result.id,
                duration_s=run.result.duration_s,
                findings=len(run.findings),
            )
            for run in runs
        ]
        blocking = [run.outcome for run in runs if run.check not in quiet]
        outcomes = blocking + (["fail"] if beside else [])
        return self.signer.sign(
            GateSuiteCompleted(
                project=config.project,
                actor=self.actor,
                commit=info.commit,
                tree=info.tree,
                unit=unit,
                reason=reason,
                cause=cause,
                outcome=worst(outcomes) if outcomes else "pass",
                advisory=sorted(quiet & {run.check for run in runs}),
                checks=entries,
                duration_s=time.monotonic() - started,
                runner=self.signer.runner,
            )
        )

    async def _trunk_runs(
        self, base: repository.CommitInfo, specs: Sequence[CheckSpec]
    ) -> dict[str, CheckRun]:
        """Trunk's own run of each pytest check on ``base`` (with trunk's own configuration,
        cached as usual): what ran and passed there."""
        assert base.config_text is not None
        trunk_config = parse_config(base.config_text)
        known = {spec.id: spec for spec in trunk_config.checks}
        before: dict[str, CheckRun] = {}
        for spec in specs:
            theirs = known.get(spec.id)
            if spec.parser == "pytest" and theirs is not None:
                before[spec.id] = await self.run_check(trunk_config, theirs, base)
        return before

    def _vanished(
        self,
        info: repository.CommitInfo,
        base: repository.CommitInfo,
        specs: Sequence[CheckSpec],
        runs: Sequence[CheckRun],
        unit: str | None,
        trunk_runs: dict[str, CheckRun],
    ) -> list[FindingRaised]:
        """A finding for each test that ran on ``base`` but not on the candidate."""
        assert base.config_text is not None
        project = parse_config(base.config_text).project
        found: list[FindingRaised] = []
        for spec, run in zip(specs, runs, strict=True):
            before = trunk_runs.get(spec.id)
            if before is None:
                continue
            for nodeid, why in vanished_tests(before.result.tests, run.result.tests)[:MAX_FINDINGS]:
                found.append(
                    self._finding_event(
                        project,
                        Finding(
                            target=CheckTarget(check=spec.id),
                            severity="high",
                            message=f"{nodeid} ran on trunk {base.commit[:12]} but {why} here; "
                            "a test that ran on trunk must run on the candidate",
                            evidence={"nodeid": nodeid, "trunk": base.commit, "now": why},
                        ),
                        spec.id,
                        unit,
                        {
                            "trunk_result": before.result.id,
                            "result": run.result.id,
                            "commit": info.commit,
                        },
                        cls="test-vanished",
                    )
                )
        return found

    async def _compare_infra(
        self,
        config: ProjectConfig,
        info: repository.CommitInfo,
        base: repository.CommitInfo,
        infra: Sequence[InfraFile],
        specs: Sequence[CheckSpec],
        runs: Sequence[CheckRun],
        trunk_runs: dict[str, CheckRun],
        criteria: Sequence[str],
        unit: str | None,
    ) -> tuple[list[Comparison], list[FindingRaised]]:
        """Run each pytest and exit-code check again with trunk's versions of the changed
        test infrastructure swapped in; a finding for each check where a test trunk passed,
        or one of the unit's criteria, ends differently, or (an exit-code check, which names
        no tests) that passes only with the candidate's files (see :mod:`.testinfra`)."""
        pairs = [(s, r) for s, r in zip(specs, runs, strict=True) if s.parser in COMPARED]
        paths = [f.path for f in infra]
        swapped = await asyncio.gather(
            *(self._swapped_run(config, spec, info, base.tree, paths) for spec, _ in pairs)
        )
        comparisons: list[Comparison] = []
        found: list[FindingRaised] = []
        for (spec, run), verdict in zip(pairs, swapped, strict=True):
            before = trunk_runs.get(spec.id)
            own = run.result.tests
            if spec.parser == "exit-code":
                compared, changes = check_change(spec.id, run.outcome, verdict.outcome)
            else:
                compared = compared_tests(
                    before.result.tests if before else None, criteria, own, verdict.tests
                )
                changes = outcome_changes(compared, own, verdict.tests)
            comparisons.append(Comparison(spec.id, compared, changes, verdict.error))
            if not changes:
                continue
            finding = Finding(
                target=CodeTarget(path=infra[0].path, start=1, end=1),
                severity="high",
                message=describe(infra, changes, verdict.error),
                evidence={
                    "files": [{"path": f.path, "why": f.why} for f in infra],
                    "changes": [
                        {"nodeid": c.nodeid, "candidate": c.own, "trunk_files": c.swapped}
                        for c in changes[:MAX_FINDINGS]
                    ],
                    "compared": len(compared),
                    "trunk": base.commit,
                    "swap_error": verdict.error,
                },
            )
            context = {"commit": info.commit, "tree": info.tree, "result": run.result.id}
            found.append(
                self._finding_event(
                    config.project, finding, spec.id, unit, context, cls="test-rewritten"
                )
            )
        return comparisons, found

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
        (a unit commit that breached its scope is not gated at all)."""
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
        suite = self.signer.sign(
            GateSuiteCompleted(
                project=self.project,
                actor=self.actor,
                commit=commit,
                tree=tree,
                unit=unit,
                reason=reason,
                cause=cause,
                outcome="error",
                error=error,
                duration_s=time.monotonic() - started,
                runner=self.signer.runner,
            )
        )
        cache = await self.cache(self.project)
        raised = finding or Finding(
            target=RecordTarget(id=f"commit:{commit or 'unknown'}"), severity="high", message=error
        )
        event = self._finding_event(
            self.project, raised, criterion, unit, {"commit": commit}, cls=cls
        )
        await self.bus.publish_atomic([event, suite])
        cache.observe(suite)
        result.suite = suite
        return result

    def _reraise(
        self, runs: Sequence[CheckRun], unit: str | None, project: str
    ) -> list[FindingRaised]:
        """Copies, for ``unit``, of a cached red result's findings raised for someone else."""
        if unit is None:
            return []
        copies: list[FindingRaised] = []
        for run in runs:
            if not run.cached or run.outcome == "pass":
                continue
            for finding in run.findings:
                if finding.unit == unit or len(copies) >= MAX_FINDINGS:
                    continue
                copies.append(
                    FindingRaised(
                        project=project,
                        actor=self.actor,
                        producer="gate_runner",
                        target=finding.target,
                        severity=finding.severity,
                        criterion=finding.criterion,
                        cls=finding.cls,
                        message=finding.message,
                        evidence={**finding.evidence, "cached_from": run.result.id},
                        unit=unit,
                        owner=f"builder:{unit}",
                    )
                )
        return copies

    # -- one check -----------------------------------------------------------------------

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
        config_sha = spec.config_sha(config.cache_salt)
        key = cache_key(spec.id, inputs, config_sha)
        cache = await self.cache(config.project)
        if not force:
            hit = await cache.lookup(key)
            if hit is not None:
                return CheckRun(
                    spec.id, hit.result.outcome, True, hit.result, hit.findings, hit.seq
                )
        flight_key = cache_key_digest(f"{config.project}|{key}|{force}")
        running = self._inflight.get(flight_key)
        if running is not None:
            shared = await asyncio.shield(running)
            return CheckRun(
                spec.id, shared.outcome, True, shared.result, shared.findings, shared.seq
            )
        future: asyncio.Future[CheckRun] = asyncio.get_running_loop().create_future()
        self._inflight[flight_key] = future
        try:
            run = await self._run_and_record(config, spec, info, inputs, config_sha, unit, cache)
            future.set_result(run)
            return run
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved here, so an unshared failure is not logged as lost
            raise
        finally:
            del self._inflight[flight_key]

    async def _run_and_record(
        self,
        config: ProjectConfig,
        spec: CheckSpec,
        info: repository.CommitInfo,
        inputs: str,
        config_sha: str,
        unit: str | None,
        cache: GateCache,
    ) -> CheckRun:
        async with self._slots:
            started = time.monotonic()
            verdict, output = await self._execute(config, spec, info)
            duration = time.monotonic() - started
        findings = [
            self._finding_event(
                config.project, f, spec.id, unit, {"tree": info.tree, "commit": info.commit}
            )
            for f in _capped(verdict.findings, spec.id)
        ]
        result = self.signer.sign(
            GateResultRecorded(
                project=config.project,
                actor=self.actor,
                check=spec.id,
                tree=info.tree,
                commit=info.commit,
                inputs=inputs,
                config_sha=config_sha,
                outcome=verdict.outcome,
                error=verdict.error,
                summary=verdict.summary,
                duration_s=duration,
                cost=output.cost if output is not None else None,
                exit_code=output.exit_code if output is not None else None,
                executor=output.executor if output is not None else "subprocess",
                runner=self.signer.runner,
                findings=[f.id for f in findings],
                findings_total=len(verdict.findings),
                tests=verdict.tests,
            )
        )
        seq = await cache.record(result, findings)
        log.info(
            "gate.recorded",
            check=spec.id,
            tree=info.tree,
            outcome=verdict.outcome,
            duration_s=round(duration, 3),
            seq=seq,
        )
        return CheckRun(spec.id, verdict.outcome, False, result, findings, seq)

    async def _execute(
        self,
        config: ProjectConfig,
        spec: CheckSpec,
        info: repository.CommitInfo,
        *,
        swap: tuple[str, Sequence[str]] | None = None,
    ) -> tuple[Verdict, RunOutput | None]:
        """Check out, run, parse; every way this can go wrong ends as an error verdict.

        ``swap``: (a tree, paths) -- after the checkout, those paths are made what that tree
        has (trunk's test infrastructure in a candidate's checkout)."""
        executor: Executor = await self._host_executor()
        if spec.image is not None:
            unreachable = await docker_reachable()
            if unreachable is not None:
                return _error_verdict(
                    spec,
                    f"it names image {spec.image} but {unreachable}; "
                    "a containerised check never falls back to the host",
                ), None
            executor = self._container
        scratch = Path(tempfile.mkdtemp(prefix=f"loopbus-gate-{spec.id}-")).resolve()
        try:
            work, out = scratch / "work", scratch / "out"
            for folder in (work, out, out / "home", out / "tmp"):
                folder.mkdir()
            try:
                await asyncio.to_thread(repository.checkout, self.repo, info.tree, work)
                if swap is not None:
                    await asyncio.to_thread(repository.overlay, self.repo, *swap, work)
            except (RepoError, OSError, KeyError) as exc:
                return _error_verdict(spec, f"could not check out tree {info.tree}: {exc}"), None
            dirs = (work, out)
            bin_dir = interpreter_dir(config.python) if config.python else None
            if config.python and bin_dir is None:
                return _error_verdict(
                    spec,
                    f"[project] python = {config.python!r} is not an interpreter on this "
                    "machine; install it or fix the path in loopbus.toml",
                ), None
            env = scrubbed_env(spec.env, out / "home", out / "tmp", bin_dir)
            if executor is self._container:
                env.update({"HOME": "/tmp", "TMPDIR": "/tmp"})
                env.pop("PATH", None)  # the image's own PATH
            if spec.parser == "pytest":
                env.update(pytest_env(spec.env, executor, dirs))
            self.executions += 1
            output = await executor.run(
                RunSpec(spec.argv(), work, out, env, spec.timeout_s, spec.image, bin_dir)
            )
            return parse(spec, output, config, out, executor.view("work", dirs)), output
        finally:
            await asyncio.to_thread(shutil.rmtree, scratch, True)

    def _finding_event(
        self,
        project: str,
        finding: Finding,
        check: str,
        unit: str | None,
        context: dict[str, Any],
        cls: FindingClass = "defect",
    ) -> FindingRaised:
        return FindingRaised(
            cls=cls,
            project=project,
            actor=self.actor,
            producer="gate_runner",
            target=finding.target,
            severity=finding.severity,
            criterion=check,
            message=finding.message[:EVIDENCE_TEXT_CAP],
            evidence={**_capped_evidence(finding.evidence), **context, "check": check},
            unit=unit,
            owner=f"builder:{unit}" if unit else None,
        )


def _error_verdict(spec: CheckSpec, reason: str) -> Verdict:
    return Verdict(
        outcome="error",
        summary=reason,
        error=reason,
        findings=[
            Finding(
                target=CheckTarget(check=spec.id),
                severity="high",
                message=f"check {spec.id!r}: {reason}",
            )
        ],
    )


def _capped(findings: list[Finding], check: str) -> list[Finding]:
    if len(findings) <= MAX_FINDINGS:
        return findings
    rest = findings[MAX_FINDINGS - 1 :]
    files: dict[str, int] = {}
    for finding in rest:
        name = finding.target.path if isinstance(finding.target, CodeTarget) else "-"
        files[name] = files.get(name, 0) + 1
    summary = Finding(
        target=CheckTarget(check=check),
        severity="high",
        message=f"{len(rest)} more findings from check {check!r} are not listed one by one",
        evidence={"by_file": dict(sorted(files.items(), key=lambda kv: -kv[1])[:50])},
    )
    return [*findings[: MAX_FINDINGS - 1], summary]


def _capped_evidence(evidence: dict[str, Any]) -> dict[str, Any]:
    return {k: (v[-EVIDENCE_TEXT_CAP:] if isinstance(v, str) else v) for k, v in evidence.items()}


def _no_config(info: repository.CommitInfo, base: repository.CommitInfo | None) -> str:
    """Why a commit cannot be judged: trunk's or its own ``loopbus.toml`` is missing."""
    if base is not None and base.config_text is None:
        return f"trunk commit {base.commit[:12]} has no {CONFIG_FILE} to judge with"
    return f"commit {info.commit[:12]} has no {CONFIG_FILE} at its root (see docs/gates.md)"


def _config_finding(exc: ConfigError, text: str) -> Finding:
    line = 1
    if exc.value is not None:
        needle = str(exc.value)
        for number, content in enumerate(text.splitlines(), start=1):
            if needle and needle in content:
                line = number
                break
    return Finding(
        target=CodeTarget(path=CONFIG_FILE, start=line, end=line),
        severity="high",
        message=str(exc),
        evidence={"field": exc.field},
    )


def _infra_files(
    repo: Path, base: repository.CommitInfo, head: repository.CommitInfo
) -> list[InfraFile]:
    """The test infrastructure ``head`` changed against ``base`` (see :mod:`.testinfra`)."""
    paths = repository.files_changed(repo, base.commit, head.commit)
    with repository.open_repo(repo) as opened:
        trees = {"base": base.tree.encode(), "head": head.tree.encode()}
        return infra_files(paths, lambda side, path: repository.blob_at(opened, trees[side], path))
