"""Rounds: what an accepted verdict or a red gate suite established, the convergence
decision on it, and the facts that record both. Pure: no I/O, no clock.

A round is closed by one atomic batch: the verdict's acceptance (or the gate round's
subtractions), the findings it raises and resolves, a halt or stop finding when there is
one, the :class:`RoundClosed` carrying the convergence verdict, and the
:class:`RungPromoted` when the unit climbs the ladder. Every id derives from what the
round answers, so the same decision made twice is stored once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from projections import convergence as conv
from projections import reviews as rv
from projections import round_rules
from projections.findings import FindingsState, key_text, open_findings
from schemas import Event, FindingRaised, FindingResolved, format_target
from schemas.ids import answer_id
from schemas.reviews import (
    Decision,
    FindingSubtracted,
    ReviewFinding,
    ReviewVerdict,
    RoundClosed,
    RungPromoted,
    VerdictAccepted,
)
from schemas.targets import CodeTarget, Target
from workers.reviewer.diff import subtraction_reason
from workers.reviewer.escalations import escalation
from workers.reviewer.facts import finding_key, halt_finding, open_id, stop_finding
from workers.reviewer.guards import Violation, criteria_files, is_security_finding
from workers.reviewer.scene import Change, Scene
from workers.reviewer.verdicts import review_finding_key


@dataclass(frozen=True)
class Round:
    """What one round found, before the convergence rules judge it."""

    unit: str
    change: Change
    cause: str
    """What the round answers: the accepted verdict, the red suite, or the ready
    transition that a halt answers before any review."""
    source: Literal["review", "gate"]
    keys: Sequence[str] = ()
    blocking: Sequence[str] = ()
    failing: Sequence[str] = ()
    halt: Sequence[Violation] = ()
    extra: Sequence[Event] = field(default_factory=tuple)
    """Facts published with the round (acceptance, raised and resolved findings)."""
    halt_finding: FindingRaised | None = None
    """The finding that halts the unit when it is already among ``extra``."""
    passed: bool = False


# -- closing a round: the convergence decision and its facts -------------------------------


def close_round(scene: Scene, closing: Round) -> list[Event]:
    """The facts that close ``closing``: its extras, halt or stop findings, the round."""
    unit = closing.unit
    history = conv.unit_view(scene.convergence, unit)
    earlier = history.facts() if history is not None else []
    previous = earlier[-1] if earlier else None
    rung = history.rung if history is not None else 1
    round_no = rv.round_count(scene.reviews, unit) + 1
    halts: list[FindingRaised] = []
    if closing.halt and closing.halt_finding is None:
        halts = [
            halt_finding(scene, unit, violation, closing.cause, index)
            for index, violation in enumerate(closing.halt)
        ]
    facts = _facts(closing, halts)
    review = scene.config.review
    decision = round_rules.decide(
        earlier, facts, round_no=round_no, rung=rung, ceiling=review.ceiling, stall=review.stall
    )
    events: list[Event] = [*closing.extra, *halts]
    finding = closing.halt_finding or (halts[0] if halts else None)
    finding_id = finding.id if finding is not None else None
    if decision.action == "stopped" and review.oversight != "full":
        stop = stop_finding(scene, unit, round_no, decision, previous, facts, closing.cause)
        events.append(stop)
        finding_id = open_id(scene, stop)
    closed = RoundClosed(
        id=answer_id(closing.cause, "round"),
        at=scene.now,
        project=scene.project,
        actor=scene.actor,
        unit=unit,
        round=round_no,
        head=closing.change.head,
        source=closing.source,
        tree=closing.change.tree,
        finding_keys=sorted(facts.keys),
        blocking_keys=sorted(facts.blocking),
        failing_checks=sorted(closing.failing),
        failure_signature=facts.signature,
        diff_digest=facts.diff_digest,
        passed=facts.passed,
        convergence=decision.convergence,
        action=decision.action,
        ended_by=decision.ended_by,
        rung=rung,
        why=decision.why,
        finding=finding_id,
        cause=closing.cause,
    )
    events.append(closed)
    if decision.rung != rung:
        events.append(
            RungPromoted(
                id=answer_id(closed.id, "rung"),
                at=scene.now,
                project=scene.project,
                actor=scene.actor,
                unit=unit,
                from_rung=rung,
                to_rung=decision.rung,
                tactic=round_rules.tactic(decision.rung),
                why=decision.why,
                round=round_no,
                cause=closed.id,
            )
        )
    return events


def _facts(closing: Round, halts: Sequence[FindingRaised]) -> round_rules.RoundFacts:
    keys = set(closing.keys) | {finding_key(f) for f in halts}
    blocking = set(closing.blocking) | {finding_key(f) for f in halts}
    reason = "; ".join(f"{v.kind}: {v.path} ({v.detail})" for v in closing.halt)
    return round_rules.RoundFacts(
        keys=frozenset(keys),
        blocking=frozenset(blocking),
        signature=round_rules.failure_signature(closing.failing, sorted(keys)),
        diff_digest=closing.change.diff.digest,
        passed=closing.passed and not closing.halt,
        halt=f"halted at once: {reason}" if reason else None,
        tree=closing.change.tree,
        source=closing.source,
    )


# -- an accepted verdict ----------------------------------------------------------------------


@dataclass
class _Sorted:
    """A verdict's findings, sorted by the diff bound: kept (raised) or subtracted."""

    raised: list[FindingRaised] = field(default_factory=list)
    kept: list[ReviewFinding] = field(default_factory=list)
    subtracted: list[FindingSubtracted] = field(default_factory=list)
    halt: FindingRaised | None = None


def accept(
    scene: Scene, claim: ReviewVerdict, request: rv.RequestView, change: Change
) -> list[Event]:
    """Accept the assigned reviewer's claim: raise its findings inside the diff, subtract
    those outside, resolve the unit's review findings it no longer raises, close the round.
    A claim that escalates auto-picked decisions is accepted as ``reject`` and closes no
    round: the unit waits on the operator instead (:mod:`.escalations`)."""
    unit = claim.unit
    found = _sort(scene, claim, request, change)
    escalating = bool(claim.escalate) and found.halt is None
    keys = sorted({review_finding_key(f) for f in found.kept})
    threshold = scene.config.review.blocking
    blocking = sorted(
        {
            review_finding_key(f)
            for f in found.kept
            if round_rules.is_blocking(f.severity, threshold)
        }
    )
    decision: Decision = "approve" if not blocking and found.halt is None else "reject"
    if escalating:
        decision = "reject"
    round_no = rv.round_count(scene.reviews, unit) + 1
    fixed = [
        FindingResolved(
            id=answer_id(claim.id, f"fixed:{finding_id}"),
            at=scene.now,
            project=scene.project,
            actor=scene.actor,
            finding=finding_id,
            why=f"not raised again in round {round_no} (verdict {claim.id} on {claim.head[:12]})",
            unit=unit,
        )
        for key, finding_id in scene.reviews.open_review.get(unit, {}).items()
        if key not in keys
    ]
    fixed += gates_passed(scene, unit, claim.head, claim.id)
    accepted = VerdictAccepted(
        id=answer_id(claim.id, "accepted"),
        at=scene.now,
        project=scene.project,
        actor=scene.actor,
        unit=unit,
        verdict=claim.id,
        request=request.id,
        reviewer=claim.actor.principal,
        decision=decision,
        claimed=claim.verdict,
        round=round_no,
        head=claim.head,
        raised=[f.id for f in found.raised],
        subtracted=[s.id for s in found.subtracted],
        cause=claim.id,
    )
    if escalating:
        sent = escalation(scene, claim, request, accepted.id)
        return [accepted, *found.raised, *found.subtracted, *fixed, *sent]
    halting: tuple[Violation, ...] = ()
    if found.halt is not None:
        what = f"{found.halt.severity} security finding {found.halt.criterion or found.halt.cls}"
        halting = (Violation("security", format_target(found.halt.target), 0, what),)
    closing = Round(
        unit=unit,
        change=change,
        cause=accepted.id,
        source="review",
        keys=keys,
        blocking=blocking,
        halt=halting,
        extra=(accepted, *found.raised, *found.subtracted, *fixed),
        halt_finding=found.halt,
        passed=decision == "approve",
    )
    return close_round(scene, closing)


def gates_passed(scene: Scene, unit: str, head: str, seed: str) -> list[FindingResolved]:
    """The unit's open gate findings from earlier rounds: a head under review passed every
    gate, so what an earlier head failed is no longer raised."""
    state: FindingsState = scene.world.state("findings")
    return [
        FindingResolved(
            id=answer_id(seed, f"gates-passed:{finding.id}"),
            at=scene.now,
            project=scene.project,
            actor=scene.actor,
            finding=finding.id,
            why=f"not raised again: the unit's gates passed on {head[:12]}",
            unit=unit,
        )
        for finding in open_findings(state, unit)
        if finding.producer == "gate_runner"
    ]


def _sort(scene: Scene, claim: ReviewVerdict, request: rv.RequestView, change: Change) -> _Sorted:
    mode = scene.config.review.subtraction
    found = _Sorted()
    for index, item in enumerate(claim.findings):
        why = subtraction_reason(item.target, change.diff, mode)
        if why is not None:
            found.subtracted.append(
                FindingSubtracted(
                    id=answer_id(claim.id, f"subtracted-{index}"),
                    at=scene.now,
                    project=scene.project,
                    actor=scene.actor,
                    unit=claim.unit,
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
            id=answer_id(claim.id, f"raised-{index}"),
            at=scene.now,
            project=scene.project,
            actor=scene.actor,  # the system raises what it accepted (naming the verdict)
            producer="reviewer",
            target=item.target,
            severity=item.severity,
            criterion=item.criterion,
            cls=item.cls,
            message=item.message,
            evidence={**item.evidence, "verdict": claim.id, "request": request.id},
            unit=claim.unit,
            owner=f"builder:{claim.unit}",
        )
        found.raised.append(finding)
        found.kept.append(item)
        if found.halt is None and is_security_finding(item.severity, item.criterion, item.cls):
            found.halt = finding
    return found


# -- a red gate suite ---------------------------------------------------------------------------


@dataclass
class _GateKeys:
    keys: set[str] = field(default_factory=set)
    blocking: set[str] = field(default_factory=set)
    security: str | None = None
    resolutions: list[Event] = field(default_factory=list)


def gate_round(
    scene: Scene,
    suite_id: str,
    suite: rv.FailedSuite,
    change: Change,
    violations: Sequence[Violation],
) -> list[Event]:
    """Close a red suite as a round: its findings outside the diff are resolved as
    subtracted; a red check with nothing left to point at is itself the finding."""
    found = _GateKeys()
    for check, outcome, result_id in suite.failing:
        refused = result_id in scene.gates.refused
        result = None if refused else scene.reviews.failing.get(result_id)
        kept = _gate_findings(scene, suite_id, suite.unit, result, change, found)
        if kept == 0:
            key = key_text(f"check:{check}", "high", f"gate-{outcome}")
            found.keys.add(key)
            found.blocking.add(key)
    for finding_id in suite.beside:  # they fail the suite as a red check does
        beside = scene.reviews.gate_findings.get(finding_id)
        if beside is None:
            continue
        key = key_text(beside.target, beside.severity, beside.criterion)
        found.keys.add(key)
        if round_rules.is_blocking(beside.severity, scene.config.review.blocking):
            found.blocking.add(key)
    halt: Sequence[Violation] = violations
    if not halt and found.security:
        halt = (Violation("security", found.security, 0, "high security finding"),)
    closing = Round(
        unit=suite.unit,
        change=change,
        cause=suite_id,
        source="gate",
        keys=sorted(found.keys),
        blocking=sorted(found.blocking),
        failing=sorted({check for check, _, _ in suite.failing}),
        halt=halt,
        extra=found.resolutions,
    )
    return close_round(scene, closing)


def _gate_findings(
    scene: Scene,
    suite_id: str,
    unit: str,
    result: rv.FailingResult | None,
    change: Change,
    found: _GateKeys,
) -> int:
    """Sort one failing result's findings into ``found``; return how many were kept."""
    mode = scene.config.review.subtraction
    view = scene.units.units.get(unit)
    contract = criteria_files(view.criteria) if view is not None else set()
    kept = 0
    for finding_id in result.findings if result is not None else []:
        finding = scene.reviews.gate_findings.get(finding_id)
        if finding is None:
            continue
        target: Target | None = None
        if finding.path is not None:
            target = CodeTarget(path=finding.path, start=finding.start, end=finding.end)
        why = subtraction_reason(target, change.diff, mode) if target else None
        if finding.path in contract:
            why = None  # the unit's criteria are its contract, in files it may not edit
        if why is not None:
            found.resolutions.append(
                FindingResolved(
                    id=answer_id(suite_id, f"subtracted:{finding_id}"),
                    at=scene.now,
                    project=scene.project,
                    actor=scene.actor,
                    finding=finding_id,
                    why=f"subtracted: outside the unit's diff (mode {mode}, diff "
                    f"{change.diff.digest[:12]}): {why}",
                    unit=unit,
                )
            )
            continue
        kept += 1
        key = key_text(finding.target, finding.severity, finding.criterion)
        found.keys.add(key)
        if round_rules.is_blocking(finding.severity, scene.config.review.blocking):
            found.blocking.add(key)
        if found.security is None and is_security_finding(
            finding.severity, finding.criterion, finding.cls
        ):
            found.security = key
    return kept
