"""The charter daemon's decision alone, on worlds folded from event lists, at chosen times:
approvals answered or refused, budgets kept, and criteria that only verified gate results
(from the system, signed) can meet."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from charterkit import OPERATOR, approval, charter, submission
from loopbus.projections.intents import Publish, PublishIf
from loopbus.schemas import Actor, Event, FindingRaised, subject_of
from loopbus.schemas.charter import (
    CharterApprove,
    CharterApproved,
    CharterCriterion,
    RunBudgets,
    RunCheckedIn,
    RunCriteriaChecked,
    RunEnded,
    RunFinalizing,
)
from loopbus.schemas.merges import CandidateTested, CheckVerdict
from loopbus.schemas.slices import (
    BootResult,
    PlannedUnit,
    SliceClosed,
    SlicePlan,
    SlicePlanAccepted,
    UsageReport,
)
from loopbus.workers.charter.daemon import CharterDaemon
from loopbus.workers.charter.decide import decide
from loopbus.workers.kernel import World
from loopbus.workers.kernel.daemon import system_actor

P = "proj"
SYSTEM = Actor(role="system", principal="charter-test")
BUILDER = Actor(role="builder", principal="b1")


def world(events: list[Event], after_s: float = 0.0) -> World:
    """What the daemon sees once it has folded ``events``, ``after_s`` after the run's
    approval (after the last event when there is none)."""
    seqs = {subject_of(e): seq for seq, e in enumerate(events, start=1)}
    return World(
        project=P,
        states={fold.name: fold.fold(events) for fold in CharterDaemon.folds},
        seqs=seqs,
        now=start_of(events) + timedelta(seconds=after_s),
        actor=system_actor("charter"),
        outside={},
        folded=len(events),
    )


def start_of(events: list[Event]) -> datetime:
    approved = [e for e in events if isinstance(e, CharterApproved)]
    return (approved[-1] if approved else events[-1]).at


def step(events: list[Event], after_s: float = 0.0) -> Any:
    intents = list(decide(world(events, after_s)))
    assert len(intents) <= 1
    if not intents:
        return None
    intent = intents[0]
    assert isinstance(intent, Publish | PublishIf)
    return intent.event


def started(**budgets: Any) -> list[Event]:
    sub = submission(P, charter(budgets=RunBudgets(**budgets)))
    claim = approval(P, sub)
    approved = step([sub, claim])
    assert isinstance(approved, CharterApproved)
    return [sub, claim, approved]


def test_an_approval_starts_the_run_of_the_charter_awaiting() -> None:
    events = started()
    approved = events[-1]
    assert approved.claim == events[1].id and approved.submission == events[0].id
    assert approved.by == OPERATOR.principal and approved.supersedes is None
    assert step(events) is None


def test_approvals_that_do_not_match_what_awaits_are_refused() -> None:
    sub = submission(P, charter())
    wrong = CharterApprove(project=P, actor=OPERATOR, charter="other", why="x")
    refusal = step([sub, wrong])
    assert isinstance(refusal, FindingRaised) and refusal.cls == "refused-transition"
    assert refusal.evidence["claim"] == wrong.id and "other" in refusal.message
    stale = CharterApprove(project=P, actor=OPERATOR, submission="0" * 26, why="x")
    assert "replaced" in step([sub, stale]).message
    none = CharterApprove(project=P, actor=OPERATOR, why="x")
    assert "no charter awaits" in step([none]).message


def test_an_agent_cannot_approve() -> None:
    """A builder's approve claim is a forgery: the fold never sees it, nothing answers."""
    sub = submission(P, charter())
    forged = CharterApprove(project=P, actor=BUILDER, charter=sub.charter.id, why="me")
    assert step([sub, forged]) is None


def test_wall_clock_check_in_finalize_end() -> None:
    events = started(wall_clock="100s")
    assert step(events, 49) is None
    checked_in = step(events, 50)
    assert isinstance(checked_in, RunCheckedIn)
    events.append(checked_in)
    assert step(events, 89) is None
    finalizing = step(events, 90)
    assert isinstance(finalizing, RunFinalizing)
    events.append(finalizing)
    assert step(events, 95) is None
    ended = step(events, 100)
    assert isinstance(ended, RunEnded) and ended.reason == "budget"


def test_the_tokens_budget_finalizes() -> None:
    events = started(tokens=100)
    plan = SlicePlan(slice="S1", units=[PlannedUnit(id="U1")])
    events.append(SlicePlanAccepted(project=P, actor=SYSTEM, plan=plan, cause="x"))
    events.append(UsageReport(project=P, actor=BUILDER, unit="U1", tokens_in=60))
    assert step(events) is None
    events.append(UsageReport(project=P, actor=BUILDER, unit="U1", tokens_out=40))
    finalizing = step(events)
    assert isinstance(finalizing, RunFinalizing) and "tokens budget (100)" in finalizing.detail


def trunk_run(actor: Actor, result: str = "01JD5Q7X3M0000000000000000") -> CandidateTested:
    return CandidateTested(
        project=P,
        actor=actor,
        stage="trunk",
        candidate="a" * 40,
        tree="b" * 40,
        outcome="pass",
        checks=[CheckVerdict(check="tests", outcome="pass", cached=False, result=result)],
    )


def test_a_test_criterion_needs_a_verified_gate_result() -> None:
    """A green trunk run whose check points at no verified gate result meets no test
    criterion (the check criterion still holds); a trunk run from an agent is ignored."""
    sub = submission(
        P,
        charter(
            criteria=(
                CharterCriterion(id="adds", text="adds", test="tests/test_calc.py::test_add"),
                CharterCriterion(id="suite", text="green", check="tests"),
            )
        ),
    )
    claim = approval(P, sub)
    events: list[Event] = [sub, claim, step([sub, claim])]
    assert step([*events, trunk_run(BUILDER)]) is None
    judged = step([*events, trunk_run(SYSTEM)])
    assert isinstance(judged, RunCriteriaChecked)
    assert judged.held == ("suite",) and judged.failing == ("adds",)
    events = [*events, trunk_run(SYSTEM)]
    judged = step(events)
    events.append(judged)
    assert not isinstance(step(events), RunCriteriaChecked), "the same run is judged once"


def test_every_criterion_held_ends_the_run_met() -> None:
    sub = submission(
        P, charter(criteria=(CharterCriterion(id="suite", text="green", check="tests"),))
    )
    claim = approval(P, sub)
    events: list[Event] = [sub, claim, step([sub, claim]), trunk_run(SYSTEM)]
    events.append(step(events))
    ended = step(events)
    assert isinstance(ended, RunEnded) and ended.reason == "met"


def test_a_met_charter_ends_the_run_once_the_slice_in_flight_has_closed() -> None:
    """Every criterion holding with a slice still open (its last unit merged, its boot
    check to come) does not end the run yet: the slice's close belongs to it."""
    sub = submission(
        P, charter(criteria=(CharterCriterion(id="suite", text="green", check="tests"),))
    )
    claim = approval(P, sub)
    plan = SlicePlan(slice="S1", units=[PlannedUnit(id="u1")])
    events: list[Event] = [sub, claim, step([sub, claim])]
    events += [SlicePlanAccepted(project=P, actor=SYSTEM, plan=plan, cause="x"), trunk_run(SYSTEM)]
    events.append(step(events))
    assert isinstance(events[-1], RunCriteriaChecked) and events[-1].held == ("suite",)
    assert step(events) is None, "S1 is open: the run waits for its close"
    boot = BootResult(command="python -m app --probe", outcome="pass")
    events.append(SliceClosed(project=P, actor=SYSTEM, slice="S1", boot=boot, done=["u1"]))
    ended = step(events)
    assert isinstance(ended, RunEnded) and ended.reason == "met"


def test_a_new_charter_approved_supersedes_the_one_in_force() -> None:
    events = started()
    newer = submission(P, charter("calc-v2"))
    claim = approval(P, newer)
    events += [newer, claim]
    approved = step(events)
    assert isinstance(approved, CharterApproved)
    assert approved.supersedes == "calc-v1" and approved.charter.id == "calc-v2"
