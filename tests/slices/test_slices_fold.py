"""The slices fold and its decisions, pure: waves, the TERMINAL barrier, holds, capacity."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slice_helpers import (
    BUILDER,
    OPERATOR,
    PureDispatcher,
    accepted,
    gate_result,
    gate_suite,
    plan,
    registration,
    transition,
    unit,
)

from projections import slice_asks, slice_dispatch, slices
from projections.slice_dispatch import BlockDependent, Close, Dispatch
from schemas import FindingRaised
from schemas.gates import GateSuiteCompleted
from schemas.reports import CommitReport, StartedReport
from schemas.slices import PlannedUnit, SlicePlan, UnitDispatched
from schemas.targets import PlanTarget
from workers.gates.signing import Signer, load_or_create

P = "proj"


def chain_and_fan() -> SlicePlan:
    return plan(
        "S1",
        unit("B"),
        *(unit(x, "B") for x in "GHIJK"),
        unit("A"),
        unit("C", "A"),
        unit("D", "C"),
        unit("E", "D"),
        unit("F", "E"),
    )


def test_first_wave_dispatches_in_order_and_waits_at_the_barrier() -> None:
    """Wave 0 goes out longest-chain first; nothing of wave 1 starts before wave 0 settles."""
    d = PureDispatcher(P)
    d.apply(*accepted(P, chain_and_fan()))
    d.step()
    assert d.dispatched() == ["A", "B"]
    d.apply(transition(P, "A", "working", by="started"), transition(P, "A", "done", by="merged"))
    assert [a for a in d.step() if isinstance(a, Dispatch)] == []  # B is not terminal yet
    d.apply(transition(P, "B", "working", by="started"), transition(P, "B", "done", by="merged"))
    d.step()
    assert d.dispatched() == ["A", "B", "C", "G", "H", "I", "J", "K"]


def test_a_unit_another_slice_holds_is_not_planned_again_and_again() -> None:
    """Two accepted plans naming one unit (the dispatcher refuses such a plan, but a fold
    takes whatever system facts the log holds): the unit belongs to the later plan, and the
    earlier slice never asks to plan it, since its UnitPlanned would never count there."""
    state = slices.initial()
    first = plan("S1", unit("A"), unit("B"))
    second = plan("S2", unit("B"))
    for event in [*accepted(P, first)[:2], *accepted(P, second)[:2]]:
        slices.apply(state, event)
    assert state.unit_slice["B"] == "S2"
    actions = slice_dispatch.next_actions(state, 8)
    planning = [a for a in actions if isinstance(a, slice_dispatch.PlanUnits)]
    assert {(a.slice, tuple(a.units)) for a in planning} == {("S1", ("A",)), ("S2", ("B",))}


def test_barrier_waits_for_terminal_not_success() -> None:
    """A failed unit satisfies the barrier; its chain is held, the fan keeps draining."""
    d = PureDispatcher(P)
    d.apply(*accepted(P, chain_and_fan()))
    d.step()
    d.apply(transition(P, "A", "failed", by="halted", ended_by="halted"))
    actions = d.step()
    holds = {(a.unit, a.failed) for a in actions if isinstance(a, BlockDependent)}
    assert holds == {("C", "A"), ("D", "A"), ("E", "A"), ("F", "A")}
    assert d.dispatched() == ["A", "B"]
    d.apply(transition(P, "B", "done", by="merged"))
    d.step()
    assert d.dispatched() == ["A", "B", "G", "H", "I", "J", "K"]
    view = d.state.slices["S1"]
    for held in "CDEF":
        assert view.units[held].state == "blocked"
        assert view.units[held].block is not None and view.units[held].block.subject == "A"
    for leaf in "GHIJ":
        d.apply(transition(P, leaf, "done", by="merged"))
    assert not any(isinstance(a, Close) for a in d.step())
    d.apply(transition(P, "K", "lost", by="heartbeat-lapse"))
    actions = d.step()
    assert [a for a in actions if isinstance(a, Close)] == [Close(slice="S1")]
    summary = slice_dispatch.settled_summary(view)
    assert summary == {
        "done": ["B", "G", "H", "I", "J"],
        "failed": ["A"],
        "lost": ["K"],
        "blocked": ["C", "D", "E", "F"],
    }


def test_a_retryable_failure_holds_its_place_until_the_retry_decision() -> None:
    """A unit whose builder gave up awaits the dispatcher's retry decision: its chain is not
    held, its entry not completed, its slice not closed. Granted, it goes back to work
    (retried) and the record says so; then done, the chain goes on."""
    d = PureDispatcher(P, retry=True)
    d.apply(*accepted(P, plan("S1", unit("A"), unit("C", "A"))))
    d.step()
    failed = transition(P, "A", "failed", by="gave-up")
    d.apply(failed)
    view = d.state.slices["S1"]
    assert slices.awaiting_retry(view.units["A"]) and not slice_dispatch.is_settled(view, "A")
    assert slice_dispatch.failed_blocker(view, "C") is None
    assert slice_dispatch.running(d.state) == ["A"]
    actions = slice_dispatch.next_actions(d.state, 8)
    assert actions == [slice_dispatch.Retry(slice="S1", unit="A", failure=failed.id)]
    taken = d.step()
    assert [type(a).__name__ for a in taken] == ["Retry", "Revive"]
    assert view.units["A"].state == "working" and view.units["A"].retry == ""
    [entry] = slices.record_entries(d.state)
    assert entry.completion is None
    assert entry.retries == ["retried on rung 2 because the stand-in's policy"]
    d.apply(transition(P, "A", "done", by="merged"))
    d.step()
    assert d.dispatched() == ["A", "C"]


@pytest.mark.parametrize(
    ("ended_by", "awaits"),
    [
        pytest.param("gave-up", True, id="gave-up"),
        pytest.param("progress-test", True, id="progress-test"),
        pytest.param("halted", False, id="halt"),
        pytest.param("ceiling", False, id="ceiling"),
        pytest.param("decision-repeated", False, id="decision-repeated"),
    ],
)
def test_only_retryable_failures_await_a_retry(ended_by: str, awaits: bool) -> None:
    """A halt, the ceiling or a decision asked again and again settle at once; a unit that
    gave up or that the progress test stopped waits for its retry decision."""
    d = PureDispatcher(P)
    d.apply(*accepted(P, plan("S1", unit("A"))))
    d.step()
    d.apply(transition(P, "A", "failed", by="halted", ended_by=ended_by))
    view = d.state.slices["S1"]
    assert slices.awaiting_retry(view.units["A"]) is awaits
    assert slice_dispatch.is_settled(view, "A") is not awaits


def test_a_refused_retry_settles_the_unit_and_the_record_says_why() -> None:
    """Refused, the unit stays failed: its chain is held, its entry completes with the
    refusal under its heading, and the slice closes."""
    d = PureDispatcher(P, retry=False)
    d.apply(*accepted(P, plan("S1", unit("A"), unit("C", "A"))))
    d.step()
    d.apply(transition(P, "A", "failed", by="gave-up"))
    taken = d.step()
    assert {type(a).__name__ for a in taken} >= {"Retry", "BlockDependent", "Complete", "Close"}
    view = d.state.slices["S1"]
    assert view.status == "closed" and view.units["A"].retry == "refused"
    [entry] = slices.record_entries(d.state)
    assert entry.completion is not None and entry.retries == ["not retried: the stand-in's policy"]


def test_capacity_bounds_running_units_across_slices() -> None:
    """No more than ``capacity`` units run at once; a freed slot goes to the next in order."""
    d = PureDispatcher(P, capacity=3)
    d.apply(*accepted(P, plan("S1", *(unit(f"U{i}") for i in range(5)))))
    d.step()
    assert d.dispatched() == ["U0", "U1", "U2"]
    d.apply(transition(P, "U1", "done", by="merged"))
    d.step()
    assert d.dispatched() == ["U0", "U1", "U2", "U3"]
    assert len(slice_dispatch.running(d.state)) == 3


def test_sub_waves_run_one_after_another() -> None:
    """Units sharing a file never run at once: the second sub-wave waits for the first."""
    d = PureDispatcher(P)
    d.apply(
        *accepted(
            P,
            plan(
                "S1",
                unit("U1", files=["app.py"]),
                unit("U2", files=["app.py"]),
                unit("U3", files=["cli.py"]),
            ),
        )
    )
    d.step()
    assert d.dispatched() == ["U1", "U3"]
    d.apply(transition(P, "U1", "done", by="merged"))
    d.step()
    assert d.dispatched() == ["U1", "U3"]
    d.apply(transition(P, "U3", "failed", by="gave-up"))
    d.step()
    assert d.dispatched() == ["U1", "U3", "U2"]
    dispatched = [e for e in d.log if isinstance(e, UnitDispatched)]
    assert [(e.wave, e.sub_wave) for e in dispatched] == [(0, 0), (0, 0), (0, 1)]


def test_run_record_has_a_stub_until_the_barrier() -> None:
    """Each dispatch opens an entry; only a unit that reached the barrier gets a completion."""
    d = PureDispatcher(P)
    d.apply(*accepted(P, plan("S1", unit("U1"), unit("U2"))))
    d.step()
    d.apply(
        StartedReport(project=P, actor=BUILDER, unit="U1"),
        CommitReport(project=P, actor=BUILDER, unit="U1", sha="a" * 40),
        transition(P, "U1", "done", by="merged"),
        StartedReport(project=P, actor=BUILDER, unit="U2"),
    )
    d.step()
    entries = {e.unit: e for e in slices.record_entries(d.state)}
    assert entries["U1"].completion is not None
    assert entries["U1"].completion.returned_nothing is False
    assert entries["U2"].completion is None
    d.apply(transition(P, "U2", "lost", by="heartbeat-lapse"))
    d.step()
    lost = slices.record_entries(d.state)[1].completion
    assert lost is not None and lost.state == "lost" and lost.returned_nothing is True


def unverified(signer: Signer, other: Signer, how: str, **kw: Any) -> GateSuiteCompleted:
    """A suite on U1's commit the gates projection would refuse, in the way ``how`` names."""
    if how == "unsigned":
        return gate_suite(None, P, "U1", **kw)
    if how == "altered-after-signing":
        fail = gate_suite(signer, P, "U1", **kw | {"outcome": "fail"})
        return msgspec.structs.replace(fail, outcome="pass")
    if how == "unknown-runner":
        return gate_suite(other, P, "U1", **kw)
    assert how == "not-the-system"
    return gate_suite(signer, P, "U1", actor=BUILDER, **kw)


@pytest.mark.parametrize(
    "how", ["unsigned", "altered-after-signing", "unknown-runner", "not-the-system"]
)
def test_an_unverified_gate_suite_is_not_a_command_run(
    signer: Signer, tmp_path: Path, how: str
) -> None:
    """Only a suite the gates projection accepts (system, signed by a registered key, the
    signature verified) becomes a command of the run record; anything else is ignored."""
    other = load_or_create(tmp_path / "other", "other")
    head = "a" * 40
    result = gate_result(signer, P, commit=head, tree="b" * 40)
    d = PureDispatcher(P)
    d.apply(registration(P, signer), *accepted(P, plan("S1", unit("U1"))))
    d.step()
    d.apply(CommitReport(project=P, actor=BUILDER, unit="U1", sha=head))
    d.apply(transition(P, "U1", "working", by="commit", commit=head), result)
    d.apply(unverified(signer, other, how, results=[result], commit=head, tree="b" * 40))
    assert d.state.slices["S1"].units["U1"].commands == []
    d.apply(gate_suite(signer, P, "U1", results=[result], commit=head, tree="b" * 40))
    [command] = d.state.slices["S1"].units["U1"].commands
    assert command.outcome == "pass" and "exit 0; 3 passed" in command.detail


def test_an_unverified_gate_result_lends_no_detail(signer: Signer) -> None:
    """A result that is not a verified fact gives a suite entry no detail to show."""
    head = "a" * 40
    result = gate_result(None, P, commit=head, tree="b" * 40, summary="forged: 99 passed")
    d = PureDispatcher(P)
    d.apply(registration(P, signer), *accepted(P, plan("S1", unit("U1"))))
    d.step()
    d.apply(CommitReport(project=P, actor=BUILDER, unit="U1", sha=head))
    d.apply(transition(P, "U1", "working", by="commit", commit=head), result)
    d.apply(gate_suite(signer, P, "U1", results=[result], commit=head, tree="b" * 40))
    [command] = d.state.slices["S1"].units["U1"].commands
    assert "forged" not in command.detail


def test_refusal_and_acceptance_answer_submissions() -> None:
    """A submission stays pending until the system accepts it or refuses it by id."""
    state = slices.initial()
    events = accepted(P, plan("S1", unit("U1")))
    slices.apply(state, events[0])
    assert [s.id for s in slice_asks.pending_submissions(state)] == [events[0].id]
    slices.apply(state, events[1])
    assert slice_asks.pending_submissions(state) == []
    other = accepted(P, plan("S2", unit("V1")))[0]
    slices.apply(state, other)
    refusal = FindingRaised(
        project=P,
        actor=msgspec.structs.replace(OPERATOR, role="system"),
        producer="gate_runner",
        target=PlanTarget(slice="S2"),
        severity="high",
        cls="refused-transition",
        message="refused",
        evidence={"submission": other.id, "problems": ["x"]},
    )
    slices.apply(state, refusal)
    assert state.submissions[other.id].status == "refused"
    assert state.submissions[other.id].problems == ["x"]


def test_a_re_stored_submission_does_not_reopen_its_answer() -> None:
    """A copy of an answered submission (same id, stored again) is not pending again: the
    dispatcher would otherwise answer it under the answer id it already used, forever."""
    state = slices.initial()
    submission, acceptance = accepted(P, plan("S1", unit("U1")))[:2]
    for event in (submission, acceptance, submission):
        slices.apply(state, event)
    assert slice_asks.pending_submissions(state) == []
    assert state.submissions[submission.id].status == "accepted"


def test_misaligned_criteria_from_field_and_evidence() -> None:
    """The criteria a misaligned finding names come from its criterion and its evidence."""
    finding = FindingRaised(
        project=P,
        actor=OPERATOR,
        producer="operator",
        target=PlanTarget(slice="S1"),
        severity="high",
        criterion="t::a",
        cls="misaligned",
        message="not what I asked for",
        evidence={"criteria": "t::b, t::a"},
    )
    assert slice_asks.misaligned_criteria(finding) == ["t::a", "t::b"]


@st.composite
def runs(draw: st.DrawFn) -> tuple[SlicePlan, list[str]]:
    size = draw(st.integers(min_value=1, max_value=10))
    names = [f"U{i}" for i in range(size)]
    units = []
    for i, name in enumerate(names):
        blockers = draw(st.lists(st.sampled_from(names[:i]), unique=True)) if i else []
        files = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, unique=True))
        units.append(PlannedUnit(id=name, blocked_by=blockers, files=files))
    endings = draw(st.lists(st.sampled_from(["done", "failed", "lost"]), min_size=size))
    return SlicePlan(slice="S", units=units), endings


@given(runs(), st.integers(min_value=1, max_value=4))
@settings(max_examples=100, deadline=None)
def test_a_run_always_settles_and_replays_identically(
    run: tuple[SlicePlan, list[str]], capacity: int
) -> None:
    """Ending units in dispatch order always settles the slice; a failed unit's dependents are
    never dispatched; no two running units share a file; a replay of the log decides the same."""
    p, endings = run
    d = PureDispatcher(P, capacity=capacity)
    d.apply(*accepted(P, p))
    for ended in range(100):
        d.step()
        running = slice_dispatch.running(d.state)
        view = d.state.slices["S"]
        owned = [view.units[u].files for u in running]
        assert not any(set(a) & set(b) for i, a in enumerate(owned) for b in owned[i + 1 :])
        if view.status == "closed":
            break
        assert running, "a run that is not closed always has a unit running"
        victim = running[0]
        d.apply(transition(P, victim, endings[ended % len(endings)], by="merged"))
    view = d.state.slices["S"]
    assert view.status == "closed"
    for u in p.units:
        failed = slice_dispatch.failed_blocker(view, u.id)
        if failed is not None:
            assert u.id not in d.dispatched()
    replay = PureDispatcher(P, capacity=capacity)
    replay.apply(*d.log)
    assert replay.state == d.state
    assert slice_dispatch.next_actions(replay.state, capacity) == []
