"""The reviewer daemon: one code-cold review per ready head, and the convergence rules.

For each project it serves (one ``--repo`` each, configured by ``[review]`` in that
repository's ``loopbus.toml``) it follows the log and, whenever it is caught up, does the
one next thing the log says is owed, in this order:

1. a unit transition owed by a closed round, a refused run or an escalation;
2. a verdict claim not answered yet: accept it (raising its findings, subtracting those
   outside the diff, closing the round) or refuse it with a finding;
3. a red gate suite of a unit not closed as a round yet: close it as a gate round;
4. a ready unit whose ready transition has no review: check the halt guards on its diff,
   choose a reviewer, and publish the request (conditionally, so two daemons cannot both);
5. an open request nobody answered: run the reviewer command (in the background).

Everything "already done" is read from the log (``projections.reviews``), so a daemon
killed at any point and restarted resumes with the next owed step. After each publish
it waits until it has folded its own event before acting again.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import structlog
from loopbus.bus import TransitionConflict
from loopbus.projections import FOLDS
from loopbus.projections import convergence as conv
from loopbus.projections import reviews as rv
from loopbus.projections.findings import key_text
from loopbus.projections.gates import GatesState, suite_for
from loopbus.projections.transitions import allowed
from loopbus.projections.units import UnitsState, UnitView
from loopbus.schemas import (
    Actor,
    Block,
    Event,
    FindingRaised,
    FindingResolved,
    Outcome,
    UnitTransitioned,
    format_target,
    project_subjects,
    subject_of,
)
from loopbus.schemas.reviews import (
    Decision,
    FindingSubtracted,
    ReviewFinding,
    ReviewRequested,
    ReviewVerdict,
    RoundClosed,
    RungPromoted,
    VerdictAccepted,
    VerdictDocument,
    VerdictRefused,
)
from loopbus.schemas.targets import CodeTarget, RecordTarget, Target
from loopbus.workers.reviewer import repo as git
from loopbus.workers.reviewer.command import (
    argv_of,
    consistency_problem,
    parse_verdict,
    review_finding_key,
    run_command,
)
from loopbus.workers.reviewer.config import RepoConfig
from loopbus.workers.reviewer.diff import (
    Diff,
    normalise_path,
    parse_unified_diff,
    subtraction_reason,
)
from loopbus.workers.reviewer.guards import (
    Violation,
    find_frozen_edits,
    find_secrets,
    is_security_finding,
)
from loopbus.workers.runtime import DaemonContext, LiveFold, follow

log = structlog.get_logger()

REVIEW_FOLDS = (*FOLDS, rv.FOLD) if conv.FOLD in FOLDS else (*FOLDS, conv.FOLD, rv.FOLD)


@dataclass(frozen=True, slots=True)
class Change:
    """A unit head's diff against its base, and who touched its commits."""

    head: str
    base: str
    diff: Diff
    identities: frozenset[tuple[str, str]]
    config_before: bytes | None
    config_after: bytes | None


def choose_reviewer(roster: Sequence[str], excluded: set[str], unit: str) -> str | None:
    """The reviewer for ``unit``: the roster minus everyone excluded, in roster order, and
    the unit id's sha256 (as a number, modulo the count) picks one. The same unit gets the
    same reviewer every round as long as the eligible set does not change."""
    eligible = [r for r in roster if r not in excluded]
    if not eligible:
        return None
    index = int(hashlib.sha256(unit.encode()).hexdigest(), 16) % len(eligible)
    return eligible[index]


def touched_by(
    roster: Sequence[str], authors: Sequence[str], identities: frozenset[tuple[str, str]]
) -> set[str]:
    """Roster principals that may not review: the unit's builders and anyone whose git
    identity authored or committed one of its commits."""
    touched = set(authors)
    for principal in roster:
        if any(git.principal_matches(principal, who) for who in identities):
            touched.add(principal)
    return touched


class Reviewer:
    """One daemon instance serving the projects in ``configs`` (project id -> config)."""

    def __init__(self, ctx: DaemonContext, configs: dict[str, RepoConfig]):
        self.ctx = ctx
        self.bus = ctx.bus
        self.configs = {p: c for p, c in configs.items() if c.review.command}
        self.fold = LiveFold(REVIEW_FOLDS)
        self.actor = Actor(role="system", principal=ctx.name)
        self.seen = 0
        self.barrier = 0
        self.unit_seq: dict[tuple[str, str], int] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.given_up: set[str] = set()
        self.changes: dict[tuple[str, str], Change] = {}

    async def run(self) -> None:
        if not self.configs:
            log.info("reviewer.idle", reason="no project configures [review] command")
            await self.ctx.stop.wait()
            return
        subjects = [project_subjects(p) for p in self.configs]
        try:
            async for record, live in follow(self.ctx, subjects=subjects):
                event = record.event
                assert event is not None
                self.fold.apply(event)
                self.seen = record.seq
                parts = record.subject.split(".")
                if len(parts) == 4 and parts[2] == "unit":  # loop.<project>.unit.<unit>
                    self.unit_seq[(parts[1], parts[3])] = record.seq
                if (live or record.pending == 0) and self.seen >= self.barrier:
                    await self.step(event.project)
        finally:
            running = list(self.tasks.values())
            for task in running:
                task.cancel()
            # let each command be killed and its temporary copy removed before returning
            await asyncio.gather(*running, return_exceptions=True)

    # -- the one next owed step ---------------------------------------------------------

    async def step(self, project: str) -> None:
        """Do owed work for ``project`` until something is published (then wait for it)."""
        config = self.configs.get(project)
        if config is None:
            return
        states = self.fold.states(project)
        state: rv.ReviewsState = states["reviews"]
        units: UnitsState = states["units"]
        for action_id, action in list(state.pending.items()):
            if await self._guarded(action_id, self.transition(config, action_id, action)):
                return
        for claim in rv.unanswered_claims(state):
            if await self._guarded(claim.id, self.judge(config, claim)):
                return
        for suite_id, suite in list(state.suites.items()):
            if await self._guarded(suite_id, self.gate_round(config, suite_id, suite)):
                return
        for view in list(units.units.values()):
            cause = view.last_event
            owed = (
                view.state == "working"
                and view.ready
                and cause is not None
                and cause not in state.by_cause
                and view.unit not in state.open
                and (view.head is None or view.head != rv.approved_head(state, view.unit))
            )
            if owed and await self._guarded(str(cause), self.request(config, view, str(cause))):
                return
        for request in rv.requests_to_run(state):
            if request.id not in self.tasks and request.id not in self.given_up:
                task = asyncio.create_task(self.review(config, request))
                self.tasks[request.id] = task
                task.add_done_callback(lambda _t, rid=request.id: self.tasks.pop(rid, None))

    async def _guarded(self, key: str, work: Any) -> bool:
        """Run one step; a step that raises is logged once and not retried by this process."""
        if key in self.given_up:
            work.close()
            return False
        try:
            return bool(await work)
        except TransitionConflict:
            return True  # someone else wrote first: re-read before deciding again
        except Exception as exc:
            self.given_up.add(key)
            log.exception("reviewer.step_failed", key=key, error=str(exc))
            return False

    async def publish(self, events: Sequence[Event]) -> None:
        if len(events) == 1:
            ack = await self.bus.publish(events[0])
            self.barrier = max(self.barrier, ack.seq)
        else:
            acks = await self.bus.publish_atomic(list(events))
            self.barrier = max(self.barrier, max(a.seq for a in acks))

    # -- 4. a ready unit: guards, reviewer choice, request --------------------------------

    async def request(self, config: RepoConfig, view: UnitView, cause: str) -> bool:
        project, unit = config.project, view.unit
        states = self.fold.states(project)
        state: rv.ReviewsState = states["reviews"]
        if view.head is None:
            return await self.escalate(
                config, unit, cause, "the unit is ready but names no head commit to review"
            )
        try:
            change = await self.change(config, unit, view.head, None)
        except Exception as exc:
            return await self.escalate(config, unit, cause, f"cannot diff its head: {exc}")
        violations = self.violations(config, view, change)
        if violations:
            await self.close_round(
                config, unit, change, cause, source="review", keys=[], blocking=[],
                failing=[], halt=violations, extra=[],
            )  # fmt: skip
            return True
        roster = config.review.roster
        excluded = touched_by(roster, rv.authors_of(state, unit), change.identities)
        reviewer = choose_reviewer(roster, excluded, unit)
        if reviewer is None:
            return await self.escalate(
                config,
                unit,
                cause,
                f"no eligible reviewer: every roster principal ({', '.join(roster)}) "
                "authored or touched the unit",
            )
        event = ReviewRequested(
            project=project,
            actor=self.actor,
            unit=unit,
            round=rv.round_count(state, unit) + 1,
            head=change.head,
            base=change.base,
            reviewer=reviewer,
            diff_digest=change.diff.digest,
            criteria=list(view.criteria),
            gate_results=len(self.gate_results(project, change.head)),
            cause=cause,
        )
        expected = await self.bus.last_subject_seq(subject_of(event))
        ack = await self.bus.publish_transition(event, expected)
        self.barrier = max(self.barrier, ack.seq)
        log.info("review.requested", unit=unit, reviewer=reviewer, round=event.round)
        return True

    def violations(self, config: RepoConfig, view: UnitView, change: Change) -> list[Violation]:
        units: UnitsState = self.fold.states(config.project)["units"]
        all_criteria = [c for u in units.units.values() for c in u.criteria]
        return find_secrets(change.diff) + find_frozen_edits(
            change.diff,
            all_criteria=all_criteria,
            own_criteria=list(view.criteria),
            frozen_globs=config.review.frozen,
            config_before=change.config_before,
            config_after=change.config_after,
        )

    async def change(self, config: RepoConfig, unit: str, head: str, base: str | None) -> Change:
        cached = self.changes.get((head, base or ""))
        if cached is not None:
            return cached
        state: rv.ReviewsState = self.fold.states(config.project)["reviews"]
        dispatched = base or state.bases.get(unit)
        raw = await asyncio.to_thread(
            git.unit_change,
            config.repo,
            head,
            dispatched=dispatched,
            trunk=config.review.trunk,
        )
        change = Change(
            head=raw.head,
            base=raw.base,
            diff=parse_unified_diff(raw.diff_text),
            identities=raw.identities,
            config_before=raw.config_before,
            config_after=raw.config_after,
        )
        if len(self.changes) > 256:
            self.changes.clear()
        self.changes[(head, base or "")] = change
        return change

    def gate_results(self, project: str, head: str) -> list[dict[str, Any]]:
        """The verified gate results cached for ``head``: what the reviewer reads instead of
        running anything."""
        gates: GatesState = self.fold.states(project)["gates"]
        suite = suite_for(gates, head)
        if suite is None:
            return []
        by_result = {entry.result: entry for entry in gates.cache.values()}
        out = []
        for item in suite.checks:
            cached = by_result.get(item.result)
            out.append(
                {
                    "check": item.check,
                    "outcome": item.outcome,
                    "cached": item.cached,
                    "duration_s": item.duration_s,
                    "summary": cached.summary if cached is not None else "",
                    "findings": item.findings,
                }
            )
        return out

    # -- 5. running the reviewer command ------------------------------------------------

    async def review(self, config: RepoConfig, request: rv.RequestView) -> None:
        try:
            await self._review(config, request)
        except Exception as exc:
            self.given_up.add(request.id)
            log.exception("review.crashed", request=request.id, error=str(exc))

    async def _review(self, config: RepoConfig, request: rv.RequestView) -> None:
        assert config.review.command is not None
        change = await self.change(config, request.unit, request.head, request.base)
        document = {
            "diff": change.diff.text,
            "gate_results": self.gate_results(config.project, request.head),
            "criteria": list(request.criteria),
        }
        workdir = Path(tempfile.mkdtemp(prefix="loopbus-review-"))
        workdir.chmod(0o755)  # the reviewer, stripped of privileges, must reach its copy
        copy = workdir / "tree"
        copy.mkdir()
        try:
            try:
                await asyncio.to_thread(git.read_only_copy, config.repo, request.head, copy)
            except Exception as exc:
                reason = f"could not prepare the read-only copy: {exc}"
                await self.reviewer_failed(config, request, reason, b"")
                return
            argv = argv_of(config.review.command, {"reviewer": request.reviewer})
            result = await run_command(
                argv,
                stdin=msgspec.json.encode(document),
                cwd=copy,
                timeout_s=config.review.timeout_s,
                env={"LOOPBUS_REVIEWER": request.reviewer},
                powerless=True,
            )
        finally:
            await asyncio.to_thread(git.make_writable, copy)
            shutil.rmtree(workdir, ignore_errors=True)
        failure = result.failure(config.review.timeout_s)
        parsed = (
            failure if failure is not None else parse_verdict(result.stdout, config.review.blocking)
        )
        if isinstance(parsed, str):
            await self.reviewer_failed(config, request, parsed, result.stdout)
            return
        verdict: VerdictDocument = parsed
        findings = [_strip_copy_path(f, copy) for f in verdict.findings]
        claim = ReviewVerdict(
            project=config.project,
            actor=Actor(role="reviewer", principal=request.reviewer),
            unit=request.unit,
            request=request.id,
            head=request.head,
            verdict=verdict.verdict,
            findings=findings,
            summary=verdict.summary,
        )
        await self.publish([claim])
        log.info("review.verdict", unit=request.unit, verdict=claim.verdict)

    async def reviewer_failed(
        self, config: RepoConfig, request: rv.RequestView, reason: str, stdout: bytes
    ) -> None:
        """Malformed output, a timeout or a non-zero exit: a finding, never a verdict."""
        finding = FindingRaised(
            project=config.project,
            actor=self.actor,
            producer="reviewer",
            target=RecordTarget(id=request.id),
            severity="high",
            criterion="reviewer-output",
            cls="reviewer-failure",
            message=f"reviewer {request.reviewer} gave no valid verdict on {request.unit}: "
            f"{reason}",
            evidence={
                "request": request.id,
                "reviewer": request.reviewer,
                "reason": reason,
                "stdout": stdout[:2000].decode("utf-8", "replace"),
            },
            unit=request.unit,
            owner="operator",
        )
        refused = VerdictRefused(
            project=config.project,
            actor=self.actor,
            unit=request.unit,
            request=request.id,
            verdict=None,
            reviewer=request.reviewer,
            reason=reason,
            finding=finding.id,
            cause=request.id,
        )
        await self.publish([finding, refused])
        log.warning("review.failed", unit=request.unit, reason=reason)

    # -- 2. judging a verdict claim -------------------------------------------------------

    async def judge(self, config: RepoConfig, claim: ReviewVerdict) -> bool:
        project = config.project
        state: rv.ReviewsState = self.fold.states(project)["reviews"]
        request = state.requests.get(claim.request)
        principal = claim.actor.principal
        change: Change | None = None
        if request is not None and request.unit == claim.unit:
            change = await self.change(config, claim.unit, request.head, request.base)
        identities = change.identities if change is not None else frozenset()
        touched = touched_by([principal], rv.authors_of(state, claim.unit), identities)
        reason: str | None = None
        criterion = "verdict-validity"
        if claim.actor.role != "reviewer":
            reason = f"a verdict must come from a reviewer, not role {claim.actor.role}"
        elif principal in touched:
            reason = f"self-review: {principal} authored or touched unit {claim.unit}"
            criterion = "no-self-review"
        elif request is None or request.unit != claim.unit:
            reason = f"it names no review request of unit {claim.unit} ({claim.request})"
        elif request.closed_by is not None:
            reason = f"request {request.id} was already answered ({request.closed_by})"
        elif principal != request.reviewer:
            reason = f"{principal} is not the reviewer assigned to it ({request.reviewer})"
        elif claim.head != request.head:
            reason = f"it judges {claim.head[:12]} but the review asked for {request.head[:12]}"
        else:
            reason = consistency_problem(claim.verdict, claim.findings, config.review.blocking)
        if reason is not None:
            # A refused claim of the assigned reviewer closes its request (the unit then
            # waits on the operator); a stray claim leaves the request and the unit alone.
            closes = None
            if (
                request is not None
                and request.closed_by is None
                and request.unit == claim.unit
                and principal == request.reviewer
            ):
                closes = request.id
            await self.refuse(config, claim, reason, criterion, closes)
            return True
        assert request is not None and change is not None
        await self.accept(config, claim, request, change)
        return True

    async def refuse(
        self,
        config: RepoConfig,
        claim: ReviewVerdict,
        reason: str,
        criterion: str,
        closes: str | None,
    ) -> None:
        finding = FindingRaised(
            project=config.project,
            actor=self.actor,
            producer="reviewer",
            target=RecordTarget(id=claim.id),
            severity="high",
            criterion=criterion,
            cls="refused-transition",
            message=f"verdict {claim.id} by {claim.actor.principal} refused: {reason}",
            evidence={"verdict": claim.id, "request": claim.request, "reason": reason},
            unit=claim.unit,
            owner="operator",
        )
        refused = VerdictRefused(
            project=config.project,
            actor=self.actor,
            unit=claim.unit,
            request=closes,
            verdict=claim.id,
            reviewer=claim.actor.principal,
            reason=reason,
            finding=finding.id,
            cause=claim.id,
        )
        await self.publish([finding, refused])
        log.warning("verdict.refused", unit=claim.unit, reason=reason)

    async def accept(
        self, config: RepoConfig, claim: ReviewVerdict, request: rv.RequestView, change: Change
    ) -> None:
        project, unit = config.project, claim.unit
        mode = config.review.subtraction
        raised: list[FindingRaised] = []
        kept: list[ReviewFinding] = []
        subtracted: list[FindingSubtracted] = []
        halt: FindingRaised | None = None
        for item in claim.findings:
            why = subtraction_reason(item.target, change.diff, mode)
            if why is not None:
                subtracted.append(
                    FindingSubtracted(
                        project=project,
                        actor=self.actor,
                        unit=unit,
                        producer="reviewer",
                        target=item.target,
                        severity=item.severity,
                        criterion=item.criterion,
                        cls=item.cls,
                        message=item.message,
                        mode=mode,
                        diff_digest=change.diff.digest,
                        source=claim.id,
                        why=f"outside the unit's diff (mode {mode}): {why}",
                    )
                )
                continue
            finding = FindingRaised(
                project=project,
                actor=claim.actor,
                producer="reviewer",
                target=item.target,
                severity=item.severity,
                criterion=item.criterion,
                cls=item.cls,
                message=item.message,
                evidence={**item.evidence, "verdict": claim.id, "request": request.id},
                unit=unit,
                owner=f"builder:{unit}",
            )
            raised.append(finding)
            kept.append(item)
            if halt is None and is_security_finding(item.severity, item.criterion, item.cls):
                halt = finding
        keys = sorted({review_finding_key(f) for f in kept})
        blocking = sorted(
            {
                review_finding_key(f)
                for f in kept
                if conv.is_blocking(f.severity, config.review.blocking)
            }
        )
        decision: Decision = "approve" if not blocking and halt is None else "reject"
        round_no = rv.round_count(self.fold.states(project)["reviews"], unit) + 1
        state: rv.ReviewsState = self.fold.states(project)["reviews"]
        fixed = [
            FindingResolved(
                project=project,
                actor=self.actor,
                finding=finding_id,
                why=f"not raised again in round {round_no} (verdict {claim.id} on "
                f"{claim.head[:12]})",
                unit=unit,
            )
            for key, finding_id in state.open_review.get(unit, {}).items()
            if key not in keys
        ]
        accepted = VerdictAccepted(
            project=project,
            actor=self.actor,
            unit=unit,
            verdict=claim.id,
            request=request.id,
            reviewer=claim.actor.principal,
            decision=decision,
            claimed=claim.verdict,
            round=round_no,
            head=claim.head,
            raised=[f.id for f in raised],
            subtracted=[s.id for s in subtracted],
            cause=claim.id,
        )
        halting = None
        if halt is not None:
            halting = [
                Violation(
                    "security",
                    format_target(halt.target),
                    0,
                    f"{halt.severity} security finding {halt.criterion or halt.cls}",
                )
            ]
        await self.close_round(
            config,
            unit,
            change,
            accepted.id,
            source="review",
            keys=keys,
            blocking=blocking,
            failing=[],
            halt=halting,
            extra=[accepted, *raised, *subtracted, *fixed],
            halt_finding=halt,
            passed=decision == "approve",
        )
        log.info("verdict.accepted", unit=unit, decision=decision, subtracted=len(subtracted))

    # -- 3. a red gate suite is a round too -------------------------------------------------

    async def gate_round(self, config: RepoConfig, suite_id: str, suite: rv.FailedSuite) -> bool:
        states = self.fold.states(config.project)
        units: UnitsState = states["units"]
        state: rv.ReviewsState = states["reviews"]
        gates: GatesState = states["gates"]
        view = units.units.get(suite.unit)
        if suite_id in gates.refused or view is None or view.state not in ("working", "blocked"):
            # an unverified suite measured nothing; a unit that is over has nothing to converge
            self.given_up.add(suite_id)
            return False
        change = await self.change(config, suite.unit, suite.commit, None)
        violations = self.violations(config, view, change)
        mode = config.review.subtraction
        resolutions: list[Event] = []
        keys: set[str] = set()
        blocking: set[str] = set()
        security: str | None = None
        for check, outcome, result_id in suite.failing:
            result = state.failing.get(result_id) if result_id not in gates.refused else None
            kept = 0
            for finding_id in result.findings if result is not None else []:
                finding = state.gate_findings.get(finding_id)
                if finding is None:
                    continue
                target: Target | None = None
                if finding.path is not None:
                    target = CodeTarget(path=finding.path, start=finding.start, end=finding.end)
                why = subtraction_reason(target, change.diff, mode) if target else None
                if why is not None:
                    resolutions.append(
                        FindingResolved(
                            project=config.project,
                            actor=self.actor,
                            finding=finding_id,
                            why=f"subtracted: outside the unit's diff (mode {mode}, diff "
                            f"{change.diff.digest[:12]}): {why}",
                            unit=suite.unit,
                        )
                    )
                    continue
                kept += 1
                key = key_text(finding.target, finding.severity, finding.criterion)
                keys.add(key)
                if conv.is_blocking(finding.severity, config.review.blocking):
                    blocking.add(key)
                if security is None and is_security_finding(
                    finding.severity, finding.criterion, finding.cls
                ):
                    security = key
            if kept == 0:  # a red check with nothing left to point at is itself the finding
                key = key_text(f"check:{check}", "high", f"gate-{outcome}")
                keys.add(key)
                blocking.add(key)
        halt = violations or (
            [Violation("security", security, 0, "high security finding")] if security else None
        )
        await self.close_round(
            config,
            suite.unit,
            change,
            suite_id,
            source="gate",
            keys=sorted(keys),
            blocking=sorted(blocking),
            failing=sorted({check for check, _, _ in suite.failing}),
            halt=halt or None,
            extra=resolutions,
        )
        return True

    # -- closing a round: the convergence decision and its facts ---------------------------

    async def close_round(
        self,
        config: RepoConfig,
        unit: str,
        change: Change,
        cause: str,
        *,
        source: str,
        keys: list[str],
        blocking: list[str],
        failing: list[str],
        halt: list[Violation] | None,
        extra: Sequence[Event],
        halt_finding: FindingRaised | None = None,
        passed: bool = False,
    ) -> None:
        project = config.project
        states = self.fold.states(project)
        history = conv.unit_view(states["convergence"], unit)
        previous = history.rounds[-1].facts() if history is not None and history.rounds else None
        rung = history.rung if history is not None else 1
        round_no = rv.round_count(states["reviews"], unit) + 1
        events: list[Event] = list(extra)
        halt_findings: list[FindingRaised] = []
        if halt and halt_finding is None:
            halt_findings = [self.halt_finding(project, unit, v, cause) for v in halt]
            events.extend(halt_findings)
            keys = sorted(set(keys) | {_finding_key(f) for f in halt_findings})
            blocking = sorted(set(blocking) | {_finding_key(f) for f in halt_findings})
        reason = "; ".join(f"{v.kind}: {v.path} ({v.detail})" for v in halt) if halt else None
        facts = conv.RoundFacts(
            keys=frozenset(keys),
            blocking=frozenset(blocking),
            signature=conv.failure_signature(failing, keys),
            diff_digest=change.diff.digest,
            passed=passed and not halt,
            halt=f"halted at once: {reason}" if reason else None,
        )
        decision = conv.decide(
            previous, facts, round_no=round_no, rung=rung, ceiling=config.review.ceiling
        )
        finding_id: str | None = None
        if halt_finding is not None:
            finding_id = halt_finding.id
        elif halt_findings:
            finding_id = halt_findings[0].id
        if decision.action == "stopped" and config.review.oversight != "full":
            stop = self.stop_finding(project, unit, round_no, decision, previous, facts, cause)
            events.append(stop)
            finding_id = stop.id
        closed = RoundClosed(
            project=project,
            actor=self.actor,
            unit=unit,
            round=round_no,
            head=change.head,
            source=source,  # type: ignore[arg-type]
            finding_keys=sorted(facts.keys),
            blocking_keys=sorted(facts.blocking),
            failing_checks=sorted(failing),
            failure_signature=facts.signature,
            diff_digest=facts.diff_digest,
            passed=facts.passed,
            convergence=decision.convergence,
            action=decision.action,
            ended_by=decision.ended_by,
            rung=rung,
            why=decision.why,
            finding=finding_id,
            cause=cause,
        )
        events.append(closed)
        if decision.rung != rung:
            events.append(
                RungPromoted(
                    project=project,
                    actor=self.actor,
                    unit=unit,
                    from_rung=rung,
                    to_rung=decision.rung,
                    tactic=conv.tactic(decision.rung),
                    why=decision.why,
                    round=round_no,
                    cause=closed.id,
                )
            )
        await self.publish(events)
        log.info(
            "round.closed",
            unit=unit,
            round=round_no,
            source=source,
            convergence=decision.convergence,
            action=decision.action,
            rung=decision.rung,
        )

    def halt_finding(
        self, project: str, unit: str, violation: Violation, cause: str
    ) -> FindingRaised:
        criterion = {"secret": "no-secrets-in-diff", "frozen-artifact": "frozen-artifact"}.get(
            violation.kind, "security"
        )
        target: Target
        if violation.kind in ("secret", "frozen-artifact"):
            line = max(violation.line, 1)
            target = CodeTarget(path=violation.path, start=line, end=line)
        else:
            target = RecordTarget(id=cause)
        message = {
            "secret": f"a credential ({violation.detail}) was added at "
            f"{violation.path}:{violation.line}; the unit halts at once",
            "frozen-artifact": f"the unit edited a frozen artifact, {violation.path} "
            f"({violation.detail}); the unit halts at once",
        }.get(violation.kind, f"{violation.detail}: the unit halts at once")
        return FindingRaised(
            project=project,
            actor=self.actor,
            producer="reviewer",
            target=target,
            severity="critical",
            criterion=criterion,
            cls="defect",
            message=message,
            evidence={"halt": violation.kind, "detail": violation.detail, "cause": cause},
            unit=unit,
            owner="operator",
        )

    def stop_finding(
        self,
        project: str,
        unit: str,
        round_no: int,
        decision: conv.RoundDecision,
        previous: conv.RoundFacts | None,
        current: conv.RoundFacts,
        cause: str,
    ) -> FindingRaised:
        before = sorted(previous.keys) if previous is not None else []
        before_blocking = sorted(previous.blocking) if previous is not None else []
        if decision.ended_by == "ceiling":
            headline = f"reached the round ceiling at round {round_no} ({decision.convergence})"
        else:
            headline = f"is {decision.convergence} at round {round_no}"
        message = (
            f"{unit} {headline}; the operator decides. Blocking before: "
            f"{before_blocking or '[]'}; now: {sorted(current.blocking) or '[]'}. "
            f"Findings before: {before or '[]'}; now: {sorted(current.keys) or '[]'}."
        )
        return FindingRaised(
            project=project,
            actor=self.actor,
            producer="reviewer",
            target=RecordTarget(id=unit),
            severity="high",
            criterion="convergence",
            cls="defect",
            message=message,
            evidence={
                "verdict": decision.convergence,
                "ended_by": decision.ended_by,
                "round": round_no,
                "previous": before,
                "current": sorted(current.keys),
                "previous_blocking": before_blocking,
                "current_blocking": sorted(current.blocking),
                "cause": cause,
            },
            unit=unit,
            owner="operator",
        )

    async def escalate(self, config: RepoConfig, unit: str, cause: str, why: str) -> bool:
        """A ready unit that cannot be reviewed at all waits for the operator on a finding."""
        finding = FindingRaised(
            project=config.project,
            actor=self.actor,
            producer="reviewer",
            target=RecordTarget(id=cause),
            severity="high",
            criterion="reviewable",
            cls="reviewer-failure",
            message=f"{unit} cannot be reviewed: {why}",
            evidence={rv.ESCALATES: cause, "reason": why},
            unit=unit,
            owner="operator",
        )
        await self.publish([finding])
        log.warning("review.escalated", unit=unit, why=why)
        return True

    # -- 1. the unit transition a fact owes -------------------------------------------------

    async def transition(
        self, config: RepoConfig, action_id: str, action: rv.PendingAction
    ) -> bool:
        project, unit = config.project, action.unit
        units: UnitsState = self.fold.states(project)["units"]
        view = units.units.get(unit)
        if view is None or view.state is None:
            return False
        event = self.owed_transition(project, view, action_id, action)
        if event is None or not allowed(view.state, event.state, event.by):
            if action_id not in self.given_up:
                self.given_up.add(action_id)
                log.info(
                    "transition.not_owed",
                    unit=unit,
                    state=view.state,
                    action=action.action or action.kind,
                )
            return False
        expected = self.unit_seq.get((project, unit), 0)
        ack = await self.bus.publish_transition(event, expected)
        self.barrier = max(self.barrier, ack.seq)
        log.info("unit.transitioned", unit=unit, state=event.state, by=event.by)
        return True

    def owed_transition(
        self, project: str, view: UnitView, cause: str, action: rv.PendingAction
    ) -> UnitTransitioned | None:
        """The transition a round, a refusal or an escalation warrants (``None``: none)."""
        common: dict[str, Any] = {
            "project": project,
            "actor": self.actor,
            "unit": view.unit,
            "prior": view.state,
            "cause": cause,
        }
        if action.kind == "round" and action.action in ("continue", "promoted"):
            return UnitTransitioned(state="working", by="returned", ready=False, **common)
        fail = action.kind == "round" and (
            action.action == "halted" or (action.action == "stopped" and action.finding is None)
        )
        if fail:
            ended_by = action.ended_by or "halted"
            return UnitTransitioned(
                state="failed",
                by="halted",
                outcome=Outcome(summary=f"{ended_by}: {action.why}", ended_by=ended_by),
                **common,
            )
        if action.finding is None:
            return None
        return UnitTransitioned(
            state="blocked",
            by="escalated",
            block=Block(reason="awaiting-operator", subject=action.finding),
            **common,
        )


def _finding_key(finding: FindingRaised) -> str:
    return key_text(format_target(finding.target), finding.severity, finding.criterion)


def _strip_copy_path(item: ReviewFinding, copy: Path) -> ReviewFinding:
    """A reviewer that reports absolute paths inside its read-only copy gets them made
    repository-relative, so they can be compared with the diff."""
    target = item.target
    if not isinstance(target, CodeTarget):
        return item
    path = target.path
    for root in (str(copy), str(copy.resolve())):
        if path.startswith(root + "/"):
            path = path[len(root) + 1 :]
    path = normalise_path(path)
    if path == target.path:
        return item
    return msgspec.structs.replace(
        item, target=CodeTarget(path=path, start=target.start, end=target.end)
    )
