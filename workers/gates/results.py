"""Recording a gate run: the facts a suite's checks and the suite itself become.

Built here, published elsewhere: a fresh check's findings and signed result form one
atomic batch, the signed suite fact another (with the findings raised beside the checks).
:class:`SuiteResult.batches` lists them in order and :attr:`SuiteResult.intents` hands
them to a kernel; the runner never publishes them itself.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from projections.intents import PublishBatch
from schemas import Actor, Event, FindingRaised
from schemas.findings import FindingClass
from schemas.gates import (
    GateOutcome,
    GateResultRecorded,
    GateSuiteCompleted,
    RunReason,
    SuiteEntry,
    worst,
)
from schemas.targets import CheckTarget, CodeTarget
from workers import repository
from workers.errors import ConfigError
from workers.gates.config import CheckSpec, ProjectConfig
from workers.gates.signing import Signer
from workers.gates.testinfra import Comparison, InfraFile
from workers.gates.verdicts import Finding, Verdict

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
    """Where the result is stored (``None``: not published yet)."""
    record: tuple[Event, ...] = ()
    """A fresh run's findings and result, the atomic batch that records it (empty: it came
    from the cache or from another suite's run in flight)."""

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
    batches: list[tuple[Event, ...]] = field(default_factory=list)
    """What recording the suite publishes, in order, each batch atomically: the runner's
    key (first time only), each fresh check's findings and result, then the suite fact
    with the findings beside it. The runner publishes none of it (see :meth:`intents`)."""

    @property
    def intents(self) -> tuple[PublishBatch, ...]:
        """The batches as intents, in order, for a daemon's shell to hand to its kernel
        (or a command to :func:`workers.kernel.oneshot.carry_out`). A fact that names the
        suite or its results goes after them in the same list: the kernel publishes in
        order and stops at the first failure, so it never reaches the log first."""
        return tuple(PublishBatch(batch) for batch in self.batches if batch)

    def stored(self, seqs: Mapping[str, int]) -> SuiteResult:
        """Note where each fresh result was stored (``seqs``: by event id, as
        :func:`~workers.kernel.oneshot.carry_out` returns them)."""
        for run in self.checks:
            if run.record and run.seq is None:
                run.seq = seqs.get(run.result.id)
        return self

    @property
    def green(self) -> bool:
        return self.outcome == "pass"

    def check(self, check_id: str) -> CheckRun:
        return next(run for run in self.checks if run.check == check_id)


def suite_fact(
    signer: Signer,
    actor: Actor,
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
    return signer.sign(
        GateSuiteCompleted(
            project=config.project,
            actor=actor,
            commit=info.commit,
            tree=info.tree,
            unit=unit,
            reason=reason,
            cause=cause,
            outcome=worst(outcomes) if outcomes else "pass",
            advisory=sorted(quiet & {run.check for run in runs}),
            checks=entries,
            duration_s=time.monotonic() - started,
            runner=signer.runner,
        )
    )


def reraise(
    actor: Actor, runs: Sequence[CheckRun], unit: str | None, project: str
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
                    actor=actor,
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


def finding_event(
    actor: Actor,
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
        actor=actor,
        producer="gate_runner",
        target=finding.target,
        severity=finding.severity,
        criterion=check,
        message=finding.message[:EVIDENCE_TEXT_CAP],
        evidence={**capped_evidence(finding.evidence), **context, "check": check},
        unit=unit,
        owner=f"builder:{unit}" if unit else None,
    )


def error_verdict(spec: CheckSpec, reason: str) -> Verdict:
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


def capped(findings: list[Finding], check: str) -> list[Finding]:
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


def capped_evidence(evidence: dict[str, Any]) -> dict[str, Any]:
    return {k: (v[-EVIDENCE_TEXT_CAP:] if isinstance(v, str) else v) for k, v in evidence.items()}


def result_facts(
    signer: Signer,
    actor: Actor,
    config: ProjectConfig,
    spec: CheckSpec,
    info: repository.CommitInfo,
    key: tuple[str, str],
    unit: str | None,
    verdict: Verdict,
) -> tuple[list[FindingRaised], GateResultRecorded]:
    """A fresh check's findings and its (unsigned) result; ``key``: its inputs digest and
    config sha. The caller adds what the run measured and signs it."""
    inputs, config_sha = key
    context = {"tree": info.tree, "commit": info.commit}
    findings = [
        finding_event(actor, config.project, f, spec.id, unit, context)
        for f in capped(verdict.findings, spec.id)
    ]
    result = GateResultRecorded(
        project=config.project,
        actor=actor,
        check=spec.id,
        tree=info.tree,
        commit=info.commit,
        inputs=inputs,
        config_sha=config_sha,
        outcome=verdict.outcome,
        error=verdict.error,
        summary=verdict.summary,
        duration_s=0.0,
        runner=signer.runner,
        findings=[f.id for f in findings],
        findings_total=len(verdict.findings),
        tests=verdict.tests,
    )
    return findings, result


def failed_suite_fact(
    signer: Signer,
    actor: Actor,
    project: str,
    commit: str | None,
    tree: str | None,
    error: str,
    unit: str | None,
    reason: RunReason,
    cause: str | None,
    started: float,
) -> GateSuiteCompleted:
    """The signed error suite of a commit that could not be gated (it ran nothing)."""
    return signer.sign(
        GateSuiteCompleted(
            project=project,
            actor=actor,
            commit=commit,
            tree=tree,
            unit=unit,
            reason=reason,
            cause=cause,
            outcome="error",
            error=error,
            duration_s=time.monotonic() - started,
            runner=signer.runner,
        )
    )
