"""Events the page tests publish: a plan, findings, a unit moved by the transition table."""

from __future__ import annotations

from projections.claims import Move, transition_event
from schemas import (
    Actor,
    Event,
    FindingRaised,
    Outcome,
    UnitPlanned,
    new_id,
    parse_target,
)
from schemas.slices import (
    PlannedUnit,
    PlanSubmission,
    SliceBudgets,
    SlicePlan,
    SlicePlanAccepted,
)

SYSTEM = Actor(role="system", principal="tests")
PLANNER = Actor(role="planner", principal="planner-1")


def accepted_plan(project: str, slice_id: str, units: list[tuple[str, list[str]]]) -> list[Event]:
    """A slice plan submitted and accepted, and its units planned (``(id, blocked_by)``)."""
    plan = SlicePlan(
        slice=slice_id,
        units=[
            PlannedUnit(id=u, title=f"build {u}", blocked_by=deps, files=[f"src/{u.lower()}.py"])
            for u, deps in units
        ],
        budgets=SliceBudgets(),
    )
    submission = PlanSubmission(project=project, actor=PLANNER, plan=plan)
    return [
        submission,
        SlicePlanAccepted(project=project, actor=SYSTEM, plan=plan, cause=submission.id),
        *(
            UnitPlanned(project=project, actor=SYSTEM, unit=u, slice=slice_id, title=f"build {u}")
            for u, _ in units
        ),
    ]


def halted(project: str, unit: str) -> Event:
    """The system stopping a planned unit (planned -> failed, a move the table allows)."""
    outcome = Outcome(summary=f"{unit} stopped", ended_by="halted")
    move = Move(unit=unit, prior=None, state="failed", by="halted", outcome=outcome)
    return transition_event(move, project, SYSTEM, new_id())


def finding(
    project: str,
    message: str,
    *,
    unit: str | None = None,
    severity: str = "medium",
    producer: str = "reviewer",
    cls: str = "defect",
    line: int = 1,
) -> FindingRaised:
    return FindingRaised(
        project=project,
        actor=SYSTEM,
        producer=producer,  # type: ignore[arg-type]
        target=parse_target(f"code:src/app.py:{line}-{line}"),
        severity=severity,  # type: ignore[arg-type]
        cls=cls,  # type: ignore[arg-type]
        message=message,
        unit=unit,
    )
