"""Judging a candidate against trunk: the tests that ran on trunk must still run on the
candidate, and a candidate that changes its test infrastructure must pass with trunk's.
Pure over the runs (the second runs are the runner's, handed in as ``swapped_run``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from schemas import Actor, FindingRaised
from schemas.targets import CheckTarget, CodeTarget
from workers import repository
from workers.gates.config import CheckSpec, ProjectConfig, parse_config
from workers.gates.execute import changed_infra
from workers.gates.results import MAX_FINDINGS, CheckRun, finding_event
from workers.gates.testinfra import (
    COMPARED,
    Comparison,
    InfraFile,
    check_change,
    compared_tests,
    describe,
    outcome_changes,
)
from workers.gates.trunkconfig import vanished_tests
from workers.gates.verdicts import Finding, Verdict

SwappedRun = Callable[
    [ProjectConfig, CheckSpec, repository.CommitInfo, str, Sequence[str]], Awaitable[Verdict]
]
"""Run a check on the candidate's checkout with some paths as a trunk tree has them."""
RunCheck = Callable[[ProjectConfig, CheckSpec, repository.CommitInfo], Awaitable[CheckRun]]
"""Run (or answer from the cache) one check on one commit."""


def vanished(
    actor: Actor,
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
                finding_event(
                    actor,
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


async def compare_infra(
    actor: Actor,
    swapped_run: SwappedRun,
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
        *(swapped_run(config, spec, info, base.tree, paths) for spec, _ in pairs)
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
            finding_event(
                actor, config.project, finding, spec.id, unit, context, cls="test-rewritten"
            )
        )
    return comparisons, found


async def trunk_runs(
    run_check: RunCheck,
    base: repository.CommitInfo,
    specs: Sequence[CheckSpec],
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
            before[spec.id] = await run_check(trunk_config, theirs, base)
    return before


@dataclass
class Judged:
    """What judging a candidate against trunk found (nothing without a trunk)."""

    trunk_runs: dict[str, CheckRun] = field(default_factory=dict)
    vanished: list[FindingRaised] = field(default_factory=list)
    infra: list[InfraFile] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    rewritten: list[FindingRaised] = field(default_factory=list)


async def against_trunk(
    actor: Actor,
    runners: tuple[RunCheck, SwappedRun],
    repo: Path,
    config: ProjectConfig,
    commits: tuple[repository.CommitInfo, repository.CommitInfo],
    specs: Sequence[CheckSpec],
    runs: Sequence[CheckRun],
    criteria: Sequence[str],
    unit: str | None,
) -> Judged:
    """Trunk's runs of the pytest checks, the tests that vanished since, and (when the
    candidate changed its test infrastructure) the runs with trunk's versions of it."""
    run_check, swapped_run = runners
    info, base = commits
    judged = Judged(trunk_runs=await trunk_runs(run_check, base, specs))
    judged.vanished = vanished(actor, info, base, specs, runs, unit, judged.trunk_runs)
    judged.infra = await asyncio.to_thread(changed_infra, repo, base, info)
    if judged.infra:  # only then: a second run of every pytest check is not free
        judged.comparisons, judged.rewritten = await compare_infra(
            actor,
            swapped_run,
            config,
            info,
            base,
            judged.infra,
            specs,
            runs,
            judged.trunk_runs,
            criteria,
            unit,
        )
    return judged
