"""The findings the reviewer raises itself (producer ``reviewer``, owned by the operator):
a refused verdict, a unit that cannot be reviewed, a halt, and a convergence stop. Pure.

Each id derives from what the finding answers, so the same decision made twice raises it
once.
"""

from __future__ import annotations

from projections import reviews as rv
from projections import round_rules
from projections.findings import PROJECT_SCOPE, key_text
from schemas import FindingRaised, format_target
from schemas.authority import REFUSAL_CLASS
from schemas.ids import answer_id
from schemas.reviews import ReviewVerdict, VerdictRefused
from schemas.targets import CodeTarget, RecordTarget, Target
from workers.reviewer.guards import Violation
from workers.reviewer.scene import Scene


def refusal(
    scene: Scene, claim: ReviewVerdict, reason: str, criterion: str, closes: str | None
) -> tuple[FindingRaised, VerdictRefused]:
    """A refused claim: the finding saying why, and the refusal (closing request
    ``closes`` when the assigned reviewer made it)."""
    finding = FindingRaised(
        id=answer_id(claim.id, "refusal-finding"),
        at=scene.now,
        project=scene.project,
        actor=scene.actor,
        producer="reviewer",
        target=RecordTarget(id=claim.id),
        severity="high",
        criterion=criterion,
        cls=REFUSAL_CLASS,
        message=f"verdict {claim.id} by {claim.actor.principal} refused: {reason}",
        evidence={"verdict": claim.id, "request": claim.request, "reason": reason},
        unit=claim.unit,
        owner="operator",
    )
    refused = VerdictRefused(
        id=answer_id(claim.id, "refused"),
        at=scene.now,
        project=scene.project,
        actor=scene.actor,
        unit=claim.unit,
        request=closes,
        verdict=claim.id,
        reviewer=claim.actor.principal,
        reason=reason,
        finding=finding.id,
        cause=claim.id,
    )
    return finding, refused


def unreviewable(scene: Scene, unit: str, cause: str, why: str) -> FindingRaised:
    """A ready unit that cannot be reviewed at all waits for the operator on this finding."""
    return FindingRaised(
        id=answer_id(cause, "unreviewable"),
        at=scene.now,
        project=scene.project,
        actor=scene.actor,
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


def finding_key(finding: FindingRaised) -> str:
    return key_text(format_target(finding.target), finding.severity, finding.criterion)


def open_id(scene: Scene, finding: FindingRaised) -> str:
    """The id the findings projection will hold ``finding`` under: the open finding with
    its key when one is open already (a repeat only counts), else its own. A unit
    escalated on it then waits on a finding that is open."""
    scope = scene.findings.open.get(finding.unit or PROJECT_SCOPE, {})
    existing = scope.get(finding_key(finding))
    return existing.id if existing is not None else finding.id


def halt_finding(
    scene: Scene, unit: str, violation: Violation, cause: str, index: int
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
        id=answer_id(cause, f"halt-{index}"),
        at=scene.now,
        project=scene.project,
        actor=scene.actor,
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
    scene: Scene,
    unit: str,
    round_no: int,
    decision: round_rules.RoundDecision,
    previous: round_rules.RoundFacts | None,
    current: round_rules.RoundFacts,
    cause: str,
) -> FindingRaised:
    """The finding a stopped unit waits on: the verdict and both rounds' sets."""
    before = sorted(previous.keys) if previous is not None else []
    before_blocking = sorted(previous.blocking) if previous is not None else []
    if decision.ended_by == "ceiling":
        headline = f"reached the round ceiling at round {round_no} ({decision.convergence})"
    else:
        headline = f"is {decision.convergence} at round {round_no} ({decision.why})"
    message = (
        f"{unit} {headline}; the operator decides. Blocking before: "
        f"{before_blocking or '[]'}; now: {sorted(current.blocking) or '[]'}. "
        f"Findings before: {before or '[]'}; now: {sorted(current.keys) or '[]'}."
    )
    return FindingRaised(
        id=answer_id(cause, "stop"),
        at=scene.now,
        project=scene.project,
        actor=scene.actor,
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
