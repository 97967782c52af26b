"""A reviewer sends auto-picked decisions to the operator. Pure: no I/O, no clock.

Every decision ``long`` mode picked alone is in the input of the unit's next review
(:func:`projections.builds.review_input`). The assigned reviewer may name any of
them in its verdict's ``escalate``; the system then, in the batch that accepts the verdict:

* accepts it as ``reject`` whatever it claimed, so no head built on a decision the
  reviewer would not let stand is merged, and closes no round (the unit is waiting on a
  person, not converging);
* raises one ``decision-needed`` finding for the operator, which the unit is escalated on
  (BLOCKED awaiting-operator, as a stopped round at supervised oversight);
* re-opens each decision as an operator decision: a ``decision.requested`` fact routed to
  the operator, naming the reviewer (``escalated_by``) and the auto pick it ``reopens``.

``loopbus decide`` answers each; the operator's record supersedes the auto pick, and the
builder daemon unblocks the unit once none is left waiting and runs its round again.
"""

from __future__ import annotations

from collections.abc import Sequence

from projections import builds
from projections import reviews as rv
from schemas import Event, FindingRaised
from schemas.decisions import DecisionRequested
from schemas.ids import answer_id
from schemas.reviews import ReviewVerdict
from schemas.targets import RecordTarget
from workers.reviewer.scene import Scene

CRITERION = "decision-escalated"


def review_input(scene: Scene, request: rv.RequestView) -> list[builds.AutoPick]:
    """The auto picks ``request`` carries (empty when the unit has none)."""
    state: builds.BuildsState = scene.world.state("builds")
    view = state.units.get(request.unit)
    return builds.review_input(view, request.id) if view is not None else []


def escalate_problem(scene: Scene, claim: ReviewVerdict, request: rv.RequestView) -> str | None:
    """A verdict may escalate only auto picks its review's input carried, each once."""
    carried = {pick.decision_id for pick in review_input(scene, request)}
    for key in claim.escalate:
        if key not in carried:
            offered = ", ".join(sorted(carried)) or "none"
            return (
                f"escalate names {key!r}, which is not an auto-picked decision in this "
                f"review's input (it carried: {offered})"
            )
    if len(set(claim.escalate)) != len(claim.escalate):
        return f"escalate names a decision twice: {', '.join(claim.escalate)}"
    return None


def escalation(
    scene: Scene, claim: ReviewVerdict, request: rv.RequestView, accepted: str
) -> Sequence[Event]:
    """The finding the unit waits on and one re-opened request per escalated decision."""
    picks = {pick.decision_id: pick for pick in review_input(scene, request)}
    chosen = [picks[key] for key in claim.escalate if key in picks]
    if not chosen:
        return ()
    reviewer = f"reviewer:{claim.actor.principal}"
    names = ", ".join(f"{p.decision_id} (auto-picked {p.chosen})" for p in chosen)
    finding = FindingRaised(
        id=answer_id(claim.id, "escalated"),
        at=scene.now,
        project=scene.project,
        actor=scene.actor,
        producer="reviewer",
        target=RecordTarget(id=claim.id),
        severity="high",
        criterion=CRITERION,
        cls="decision-needed",
        message=(
            f"unit {claim.unit}: {reviewer} sends {names} to the operator; settle each with "
            f"loopbus decide --unit {claim.unit} --decision ID --choose OPTION"
        ),
        evidence={
            rv.ESCALATES: accepted,
            "decisions": [p.decision_id for p in chosen],
            "verdict": claim.id,
        },
        unit=claim.unit,
        owner="operator",
    )
    events: list[Event] = [finding]
    state: builds.BuildsState = scene.world.state("builds")
    view = state.units[claim.unit]
    for pick in chosen:
        record = view.decisions.get(pick.decision_id)
        events.append(
            DecisionRequested(
                id=answer_id(claim.id, f"escalated:{pick.decision_id}"),
                at=scene.now,
                project=scene.project,
                actor=scene.actor,
                unit=claim.unit,
                decision_id=pick.decision_id,
                question=pick.question,
                options=list(record.trade_offs) if record is not None else [],
                recommended_default=pick.chosen,
                confidence=pick.stated_confidence or "med",
                reasoning=pick.rationale,
                routed="operator",
                finding=finding.id,
                autonomy=pick.autonomy,
                escalated_by=reviewer,
                reopens=pick.record,
            )
        )
    return events
