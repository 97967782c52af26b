"""The dispatcher's decision alone, on worlds folded from event lists: one slice fact at a
time, repository reads and the boot as effects, holds through the transition table."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from slice_helpers import PLANNER, SYSTEM, accepted, plan, transition, unit

from projections import slice_dispatch, slices, transitions
from projections.intents import Effect, Intent, MoveUnit, Publish, PublishIf
from schemas import Event, FindingResolved, UnitPlanned, subject_of
from schemas.slices import (
    BootResult,
    PlanSubmission,
    SliceClosed,
    SlicePlan,
    SlicePlanAccepted,
    UnitDispatched,
)
from workers.dispatcher.answers import Criteria
from workers.dispatcher.daemon import Dispatcher
from workers.dispatcher.decide import (
    Options,
    TrunkRead,
    boot_name,
    decide,
    reads_name,
)
from workers.dispatcher.effects import Boot, ReadCriteria, ReadTrunk
from workers.kernel import World
from workers.kernel.daemon import system_actor

P = "proj"
NOW = datetime(2030, 1, 1, tzinfo=UTC)
WITH_REPO = Options(capacity=8, repos=frozenset({P}))
NO_REPO = Options(capacity=8)


def world(events: list[Event], **kw: Any) -> World:
    """The world a dispatcher sees once it has folded ``events``."""
    seqs = {subject_of(e): seq for seq, e in enumerate(events, start=1)}
    fields: dict[str, Any] = {
        "project": P,
        "states": {fold.name: fold.fold(events) for fold in Dispatcher.folds},
        "seqs": seqs,
        "now": NOW,
        "actor": system_actor("dispatcher"),
        "outside": {},
        "folded": len(events),
    } | kw
    return World(**fields)


def published(intents: list[Intent]) -> list[Event]:
    return [i.event for i in intents if isinstance(i, Publish | PublishIf)]


def test_a_plan_is_answered_only_once_trunks_criteria_are_read() -> None:
    """With a repository the answer waits for the shell's reading of trunk; with it, the
    acceptance is conditional on the slice subject and names where the criteria came from."""
    submission = accepted(P, plan("S1", unit("A", criteria=["t::a"])))[0]
    events = [submission]
    [ask] = decide(world(events), WITH_REPO)
    assert isinstance(ask, ReadCriteria)
    reading = {reads_name(P): {ask.key: Criteria(["t::a"], "loopbus.toml@abc")}}
    [answer] = decide(world(events, outside=reading), WITH_REPO)
    assert isinstance(answer, PublishIf) and answer.expected == 0
    assert isinstance(answer.event, SlicePlanAccepted)
    assert answer.event.criteria_source == "loopbus.toml@abc"
    assert answer.event.pending == ["t::a"]


def test_one_slice_fact_at_a_time_in_dispatch_order() -> None:
    """Two units of wave 0: the decision dispatches the first and only the first; once that
    is folded, the second."""
    events = accepted(P, plan("S1", unit("A"), unit("B")))
    [first] = decide(world(events), NO_REPO)
    assert isinstance(first, PublishIf) and isinstance(first.event, UnitDispatched)
    assert first.event.unit == "A" and first.expected == world(events).expected(first.event)
    events.append(first.event)
    [second] = published(decide(world(events), NO_REPO))
    assert isinstance(second, UnitDispatched) and second.unit == "B"


def test_a_running_read_holds_back_every_other_step() -> None:
    """While trunk is being read for A's dispatch, B is not dispatched ahead of it; with the
    reading, A goes out against that trunk commit."""
    events = accepted(P, plan("S1", unit("A"), unit("B")))
    [ask] = decide(world(events), WITH_REPO)
    assert isinstance(ask, ReadTrunk)
    assert decide(world(events, running=frozenset({ask.key})), WITH_REPO) == [ask]
    reading = {reads_name(P): {ask.key: TrunkRead("f" * 40)}}
    [dispatched] = published(decide(world(events, outside=reading), WITH_REPO))
    assert isinstance(dispatched, UnitDispatched)
    assert (dispatched.unit, dispatched.base) == ("A", "f" * 40)


def test_a_failed_read_is_skipped_for_the_next_step() -> None:
    """A read that raised is not asked for again by this process; the next step goes on."""
    events = accepted(P, plan("S1", unit("A")))
    events += accepted(P, plan("S2", unit("X")))
    [ask] = decide(world(events), WITH_REPO)
    [other] = decide(world(events, failed=frozenset({ask.key})), WITH_REPO)
    assert ask.key.endswith(":A:1") and isinstance(other, Effect) and other.key.endswith(":X:1")


def test_holds_are_the_transition_tables_moves() -> None:
    """The undispatched dependents of a failed unit are held with claims.hold: a MoveUnit on
    each unit's subject, prior and cause filled, an id derived from the failure."""
    events = accepted(P, plan("S1", unit("A"), unit("C", "A"), unit("D", "C")))
    events.append(transition(P, "A", "failed", by="halted", ended_by="halted"))
    moves = [i for i in decide(world(events), NO_REPO) if isinstance(i, MoveUnit)]
    assert [(m.move.unit, m.move.block.subject) for m in moves] == [("C", "A"), ("D", "A")]  # type: ignore[union-attr]
    for m in moves:
        assert m.move.by == "hold" and m.move.prior is None and m.move.cause == events[-1].id
        assert transitions.allowed(m.move.prior, m.move.state, m.move.by)
    assert decide(world(events), NO_REPO) == decide(world(events), NO_REPO)  # ids derived


def test_a_hold_the_table_refuses_is_never_published() -> None:
    """A dependent that already started is not held (the table allows holding only a unit
    that never started), even though the slice still counts it as waiting on the failure."""
    events = accepted(P, plan("S1", unit("A"), unit("C", "A")))
    events.append(transition(P, "C", "working", by="started"))
    events.append(transition(P, "A", "failed", by="halted", ended_by="halted"))
    assert any(
        isinstance(a, slice_dispatch.BlockDependent)
        for a in slice_dispatch.next_actions(slices.FOLD.fold(events), 8)
    )
    assert [i for i in decide(world(events), NO_REPO) if isinstance(i, MoveUnit)] == []


def test_units_of_an_accepted_plan_are_planned_before_anything_else() -> None:
    """After a crash between the acceptance and its units, the units are planned (ids derived
    from the acceptance) and held from being held until they are on the log."""
    submission, acceptance, *_ = accepted(P, plan("S1", unit("A"), unit("C", "A")))
    events = [submission, acceptance, transition(P, "A", "failed", by="halted")]
    intents = decide(world(events), NO_REPO)
    planned = [e for e in published(intents) if isinstance(e, UnitPlanned)]
    assert [u.unit for u in planned] == ["A", "C"]
    assert not [i for i in intents if isinstance(i, MoveUnit)]


def test_a_settled_slice_boots_then_closes_with_the_result() -> None:
    """A settled slice asks the shell to boot trunk; it closes only with the result the
    boot reported, naming it."""
    events = accepted(P, plan("S1", unit("A")))
    events.append(transition(P, "A", "failed", by="gave-up"))
    view = slices.FOLD.fold(events).slices["S1"]
    boot = [i for i in decide(world(events), WITH_REPO) if isinstance(i, Effect)]
    assert [type(b) for b in boot] == [Boot]
    booted = BootResult(outcome="pass", commit="f" * 40, result="01JAAAAAAAAAAAAAAAAAAAAAAA")
    outside = {boot_name(P, view.accepted): booted}
    [closed] = published(decide(world(events, outside=outside), WITH_REPO))
    assert isinstance(closed, SliceClosed) and closed.boot == booted and closed.failed == ["A"]


def test_without_a_repository_the_plan_is_refused_by_the_machinery() -> None:
    """No repository: no read is asked for; the refusal is the system's (producer standards)
    and owned by the planner."""
    submission = accepted(P, plan("S1", unit("A")))[0]
    assert submission.actor == PLANNER
    [refusal] = published(decide(world([submission]), NO_REPO))
    assert refusal.producer == "standards" and refusal.owner == "planner"  # type: ignore[union-attr]
    assert "no repository configured" in refusal.message  # type: ignore[union-attr]


def refused(p: SlicePlan) -> list[Event]:
    """A submission of ``p`` and the dispatcher's refusal of it (with no repository)."""
    submission = PlanSubmission(project=P, actor=PLANNER, plan=p)
    [refusal] = published(decide(world([submission]), NO_REPO))
    return [submission, refusal]


def resolutions(events: list[Event]) -> list[FindingResolved]:
    return [e for e in published(decide(world(events), NO_REPO)) if isinstance(e, FindingResolved)]


@pytest.mark.parametrize("closed", [False, True], ids=["open", "already-resolved"])
def test_an_open_refusal_is_resolved_once_its_slice_has_a_plan(closed: bool) -> None:
    """A plan accepted for a refused plan's slice resolves the refusal (once: its id derives
    from the refusal); a refusal already resolved (the operator's move, answered by the
    lifecycle daemon) is left alone."""
    events = refused(plan("S1", unit("X", "Y"), unit("Y", "X")))
    refusal = events[1]
    if closed:
        events.append(FindingResolved(project=P, actor=SYSTEM, finding=refusal.id, why="seen"))
    events += accepted(P, plan("S1", unit("A")))
    if closed:
        assert resolutions(events) == []
        return
    [resolution] = resolutions(events)
    assert resolution.finding == refusal.id and resolution.actor.role == "system"
    assert [e.id for e in resolutions(events)] == [resolution.id]  # the same fact, stored once
    assert resolutions([*events, resolution]) == []
