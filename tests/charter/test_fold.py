"""The charter fold: awaiting, approval, supersession, the run's criteria, spend and end,
and the two questions other daemons ask of it (planning allowed, dispatch held)."""

from __future__ import annotations

from projections import charter as fold
from projections.charter import dispatch_hold, planning_allowed
from schemas import Actor, decode_event, encode_event
from schemas.authority import standing
from schemas.charter import (
    Charter,
    CharterApprove,
    CharterApproved,
    CharterCriterion,
    CharterSubmission,
    RunCriteriaChecked,
    RunEnded,
    RunFinalizing,
    RunStop,
)
from schemas.findings import FindingRaised
from schemas.slices import PlannedUnit, SlicePlan, SlicePlanAccepted, UsageReport
from schemas.targets import PlanTarget

P = "demo"
SYSTEM = Actor(role="system", principal="charter")
OPERATOR = Actor(role="operator", principal="ana")
BUILDER = Actor(role="builder", principal="b1")
SHA = "a" * 40


def charter(cid: str = "C1") -> Charter:
    return Charter(
        id=cid,
        title="calculator",
        criteria=(
            CharterCriterion(id="adds", text="it adds", test="tests/test_calc.py::test_add"),
            CharterCriterion(id="lint", text="lint is clean", check="lint"),
        ),
    )


def submitted(cid: str = "C1") -> CharterSubmission:
    return CharterSubmission(project=P, actor=OPERATOR, charter=charter(cid))


def approved(sub: CharterSubmission, supersedes: str | None = None) -> CharterApproved:
    claim = CharterApprove(project=P, actor=OPERATOR, charter=sub.charter.id)
    return CharterApproved(
        project=P,
        actor=SYSTEM,
        charter=sub.charter,
        claim=claim.id,
        submission=sub.id,
        supersedes=supersedes,
    )


def accepted(slice_id: str) -> SlicePlanAccepted:
    plan = SlicePlan(slice=slice_id, units=[PlannedUnit(id=f"{slice_id}-u1")])
    return SlicePlanAccepted(project=P, actor=SYSTEM, plan=plan, cause="x")


def test_no_charter_plans_by_hand_as_before() -> None:
    view = fold.FOLD.fold([accepted("S1")])
    assert view.state == "none"
    assert dispatch_hold(view) == ""
    assert not planning_allowed(view)
    assert view.slices == ()


def test_a_submitted_charter_holds_dispatch_until_approved() -> None:
    sub = submitted()
    view = fold.FOLD.fold([sub])
    assert view.state == "awaiting-approval"
    assert view.awaiting == sub.charter and view.charter is None
    assert "awaits" in dispatch_hold(view)
    assert not planning_allowed(view)
    fold.FOLD.apply(view, approved(sub))
    assert view.state == "running"
    assert view.charter == sub.charter and view.awaiting is None
    assert dispatch_hold(view) == ""
    assert planning_allowed(view)


def test_an_approval_from_anyone_but_the_system_is_ignored() -> None:
    sub = submitted()
    forged = CharterApproved(project=P, actor=BUILDER, charter=sub.charter)
    assert standing(forged) == "forged"
    view = fold.FOLD.fold([sub, forged])
    assert view.state == "awaiting-approval"


def test_charter_claims_are_the_operators_alone() -> None:
    for actor, expected in ((OPERATOR, "claim"), (BUILDER, "forged")):
        assert standing(CharterSubmission(project=P, actor=actor, charter=charter())) == expected
        assert standing(CharterApprove(project=P, actor=actor)) == expected
        assert standing(RunStop(project=P, actor=actor)) == expected
    # a planner cannot slip a charter in for an operator to approve by mistake
    view = fold.FOLD.fold([CharterSubmission(project=P, actor=BUILDER, charter=charter())])
    assert view.state == "none"


def test_slices_and_tokens_count_from_approval() -> None:
    sub = submitted()
    events = [
        accepted("S0"),
        UsageReport(project=P, actor=BUILDER, unit="S0-u1", tokens_in=500),
        sub,
        approved(sub),
        accepted("S1"),
        UsageReport(project=P, actor=BUILDER, unit="S1-u1", tokens_in=10, tokens_out=5),
    ]
    view = fold.FOLD.fold(events)
    assert view.slices == ("S1",)
    assert view.tokens == 15


def test_only_a_builders_usage_for_a_unit_of_the_run_counts() -> None:
    """Any role may publish a usage report: an agent's of another role, one for a unit
    outside the run, or one claiming more than any model run spends would let an agent end
    the run on its tokens budget; none of them counts."""
    sub = submitted()
    reviewer = Actor(role="reviewer", principal="r1")
    events = [
        sub,
        approved(sub),
        accepted("S1"),
        UsageReport(project=P, actor=reviewer, unit="S1-u1", tokens_in=10**6),
        UsageReport(project=P, actor=BUILDER, unit="elsewhere", tokens_in=10**6),
        UsageReport(project=P, actor=BUILDER, unit="S1-u1", tokens_in=10**12),
        UsageReport(project=P, actor=BUILDER, unit="S1-u1", tokens_out=7),
    ]
    assert fold.FOLD.fold(events).tokens == 7


def test_criteria_held_and_met() -> None:
    sub = submitted()
    start = approved(sub)
    view = fold.FOLD.fold([sub, start])
    half = RunCriteriaChecked(
        project=P,
        actor=SYSTEM,
        run=start.id,
        charter="C1",
        trunk=SHA,
        held=("lint",),
        failing=("adds",),
    )
    fold.FOLD.apply(view, half)
    assert view.criteria_trunk == SHA and view.held == {"lint"} and not view.met
    assert planning_allowed(view)
    full = RunCriteriaChecked(
        project=P,
        actor=SYSTEM,
        run=start.id,
        charter="C1",
        trunk="b" * 40,
        held=("lint", "adds"),
    )
    fold.FOLD.apply(view, full)
    assert view.met and not planning_allowed(view)
    assert fold.criteria_summary(view) == "2 of 2 criteria hold on trunk bbbbbbb"


def test_a_fact_about_a_superseded_run_changes_nothing() -> None:
    first = submitted("C1")
    run1 = approved(first)
    second = submitted("C2")
    run2 = approved(second, supersedes="C1")
    late = RunEnded(project=P, actor=SYSTEM, run=run1.id, charter="C1", reason="budget")
    view = fold.FOLD.fold([first, run1, accepted("S1"), second])
    assert view.state == "awaiting-approval" and view.charter is not None
    assert view.charter.id == "C1"
    assert dispatch_hold(view)
    fold.FOLD.fold([run2, late], view)
    assert view.charter is not None and view.charter.id == "C2"
    assert view.superseded == ("C1",)
    assert view.state == "running" and view.ended is None
    assert view.slices == ()


def test_finalizing_then_ended_holds_dispatch() -> None:
    sub = submitted()
    start = approved(sub)
    stop = RunStop(project=P, actor=OPERATOR, why="enough")
    view = fold.FOLD.fold([sub, start, stop])
    assert list(view.stops) == [stop.id]
    fold.FOLD.apply(view, RunFinalizing(project=P, actor=SYSTEM, run=start.id, charter="C1"))
    assert view.state == "finalizing" and not planning_allowed(view)
    assert dispatch_hold(view) == ""  # the open slice may finish
    fold.FOLD.apply(
        view,
        RunEnded(
            project=P, actor=SYSTEM, run=start.id, charter="C1", reason="stopped", claim=stop.id
        ),
    )
    assert view.state == "ended" and view.ended == "stopped"
    assert "ended" in dispatch_hold(view)
    assert view.stops == {}
    fold.FOLD.apply(view, accepted("S9"))
    assert view.slices == ()


def test_a_refused_approval_is_no_longer_pending() -> None:
    sub = submitted()
    claim = CharterApprove(project=P, actor=OPERATOR, charter="nope")
    refusal = FindingRaised(
        project=P,
        actor=SYSTEM,
        producer="meta_rule",
        target=PlanTarget(slice="charter"),
        severity="low",
        criterion="charter",
        cls="refused-transition",
        message="no such",
        evidence={"claim": claim.id},
    )
    view = fold.FOLD.fold([sub, claim])
    assert list(view.approvals) == [claim.id]
    fold.FOLD.apply(view, refusal)
    assert view.approvals == {}


def test_the_view_and_events_round_trip() -> None:
    sub = submitted()
    start = approved(sub)
    for event in (sub, start):
        assert decode_event(encode_event(event)) == event
    view = fold.FOLD.fold([sub, start])
    assert fold.FOLD.decode(fold.FOLD.encode(view)) == view
