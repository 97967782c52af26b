"""Trunk gates: how the merger asks "is this commit green?", and the gate runner behind it.

The merger depends only on :class:`TrunkGates`. :class:`RunnerTrunkGates` is the one
implementation: it calls the gate runner's own suite code path
(:meth:`workers.gates.runner.GateRunner.evaluate`, reason ``trunk``), and the verdict
carries the intents that record every result as a signed ``GateResultRecorded``
(``TrunkVerdict.records``): the merger's kernel publishes them, ahead of the verdict that
names them, and the shared, content-addressed cache serves them from then on. A
candidate's tree is exactly the tree trunk moves to, so trunk's own run finds every
candidate check in the cache and runs only the trunk-only ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from projections.intents import PublishBatch
from schemas import FindingRaised, format_target
from schemas.adoption import config_digest
from schemas.gates import GateOutcome, worst
from schemas.merges import CheckVerdict, FailingTest
from workers.gates.runner import CheckRun, GateRunner, SuiteResult
from workers.gates.trunkconfig import ConfigChange

MESSAGE_CAP = 500
DETAIL_CAP = 1500
MAX_FAILING = 50
"""Failing tests carried on a merge fact; the gate results on the log list every one."""


@dataclass(frozen=True)
class TrunkVerdict:
    """What the trunk gates concluded about one commit."""

    commit: str
    tree: str
    outcome: GateOutcome
    checks: list[CheckVerdict] = field(default_factory=list)
    failing: list[FailingTest] = field(default_factory=list)
    error: str = ""
    suite: str | None = None
    config: str = ""
    """The digest of the adopted configuration the run was judged with."""
    records: tuple[PublishBatch, ...] = ()
    """What records the suite (fresh results, their findings, the suite fact), unpublished:
    listed before the fact that names them, which must never reach the log first."""

    @property
    def green(self) -> bool:
        return self.outcome == "pass"

    @property
    def executed(self) -> int:
        """Checks that actually ran (were not answered from the cache)."""
        return sum(1 for check in self.checks if not check.cached)


class TrunkGates(Protocol):
    """Runs the gates of ``commit`` in ``repo`` (all checks, or ``checks``)."""

    async def run(
        self,
        repo: Path,
        commit: str,
        *,
        checks: Sequence[str] = (),
        trunk: str | None = None,
        criteria: Sequence[str] = (),
        force: bool = False,
        judge: str | None = None,
    ) -> TrunkVerdict:
        """``trunk``: judge against that commit (keep its tests), where ``criteria`` may be
        cleared from ``pending``; ``judge``: the ``loopbus.toml`` text that judges (the
        adopted configuration) instead of any commit's own; ``force``: run past the cache."""
        ...


class RunnerTrunkGates:
    """:class:`TrunkGates` through the gate runner (one :class:`GateRunner` per repository)."""

    def __init__(self, runner: GateRunner):
        self.runner = runner

    async def run(
        self,
        repo: Path,
        commit: str,
        *,
        checks: Sequence[str] = (),
        trunk: str | None = None,
        criteria: Sequence[str] = (),
        force: bool = False,
        judge: str | None = None,
    ) -> TrunkVerdict:
        if Path(repo).resolve() != self.runner.repo.resolve():
            raise ValueError(f"this gate runner serves {self.runner.repo}, not {repo}")
        suite = await self.runner.evaluate(
            commit,
            checks=checks,
            reason="trunk",
            trunk=trunk,
            criteria=criteria,
            force=force,
            judge=judge,
        )
        verdict = verdict_of(suite, commit)
        return verdict if judge is None else replace(verdict, config=config_digest(judge))


def verdict_of(suite: SuiteResult, commit: str) -> TrunkVerdict:
    """A gate runner suite as a trunk verdict: per-check outcomes and what was red."""
    checks = [
        CheckVerdict(check=run.check, outcome=run.outcome, cached=run.cached, result=run.result.id)
        for run in suite.checks
    ]
    failing = [test for run in suite.checks if run.outcome != "pass" for test in failing_of(run)]
    failing += [_beside(finding) for finding in suite.beside]  # red with every check green
    failing = failing[:MAX_FAILING]
    if suite.error and not failing:
        failing = [FailingTest(test="suite", check="suite", message=suite.error[:MESSAGE_CAP])]
    return TrunkVerdict(
        commit=suite.commit or commit,
        tree=suite.tree or "",
        outcome=suite.outcome,
        checks=checks,
        failing=failing,
        error=suite.error,
        suite=suite.suite.id if suite.suite is not None else None,
        records=suite.intents,
    )


def config_refused(verdict: TrunkVerdict, changes: Sequence[ConfigChange]) -> TrunkVerdict:
    """A candidate that edits trunk's gate configuration beyond what a unit may is red
    whatever its gates said: landing it would make that edit trunk's configuration."""
    shown = "; ".join(f"{c.field}: {c.detail}" for c in changes[:5])
    more = "; …" if len(changes) > 5 else ""
    refusal = FailingTest(
        test="gate-configuration",
        check="gate-configuration",
        message=f"the candidate edits trunk's loopbus.toml beyond what a unit may: {shown}{more}"[
            :MESSAGE_CAP
        ],
    )
    outcome = worst([verdict.outcome, "fail"])
    return replace(verdict, outcome=outcome, failing=[refusal, *verdict.failing][:MAX_FAILING])


def failing_of(run: CheckRun) -> list[FailingTest]:
    """The tests one red check names (pytest node ids), else the check itself."""
    tests: list[FailingTest] = []
    seen: set[str] = set()
    for finding in run.findings:
        test = _test_of(finding) or f"check:{run.check}"
        if test in seen:
            continue
        seen.add(test)
        tests.append(
            FailingTest(
                test=test,
                check=run.check,
                message=finding.message[:MESSAGE_CAP],
                target=format_target(finding.target),
                detail=_detail_of(finding),
            )
        )
    if not tests:
        reason = run.result.error or run.result.summary or run.outcome
        tests.append(FailingTest(test=f"check:{run.check}", check=run.check, message=reason))
    return tests


def _beside(finding: FindingRaised) -> FailingTest:
    """A finding that failed the suite beside its checks, as the test it names (a vanished
    test) or the files it names (a test-infrastructure rewrite)."""
    return FailingTest(
        test=_test_of(finding) or finding.cls,
        check=finding.criterion,
        message=finding.message[:MESSAGE_CAP],
        target=format_target(finding.target),
    )


def _test_of(finding: FindingRaised) -> str | None:
    nodeid = finding.evidence.get("nodeid")
    return nodeid if isinstance(nodeid, str) and nodeid else None


def _detail_of(finding: FindingRaised) -> str:
    """The traceback (pytest) or output tail (other checks), its end kept when too long."""
    for key in ("longrepr", "output_tail"):
        text = finding.evidence.get(key)
        if isinstance(text, str) and text:
            return text[-DETAIL_CAP:]
    return ""
