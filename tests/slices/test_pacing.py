"""Pacing: the dispatcher keeps fewer units in flight when agents are quicker than the gates,
so that two units' commits do not meet at the gates (where the second one's merge candidate
runs its suite again), and the whole capacity when agents are slower."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from slice_helpers import PureDispatcher, accepted, plan, transition, unit

from projections import pacing
from projections.pacing import Pace, in_flight_limit
from schemas import Block
from schemas.slices import UnitDispatched

P = "p1"
T0 = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


def test_without_samples_the_capacity_alone_applies() -> None:
    assert in_flight_limit(Pace(), 4) == 4


def test_agents_quicker_than_the_gates_get_one_unit_at_a_time() -> None:
    assert in_flight_limit(Pace(builds=[0.1, 0.2, 0.1], gates=[1.3, 1.2, 1.5]), 4) == 1


def test_agents_slower_than_the_gates_get_as_many_as_the_gates_take_in_turn() -> None:
    pace = Pace(builds=[10.0, 12.0, 9.0], gates=[3.0, 3.5, 2.5])
    assert in_flight_limit(pace, 8) == 3  # a commit every 10 / 3 s; the gates take 3 s each
    assert in_flight_limit(pace, 2) == 2  # never above the capacity


def test_the_medians_follow_the_latest_units_only() -> None:
    pace = Pace()
    for n in range(pacing.SAMPLES + 5):
        clock = pacing.UnitClock()
        start = T0 + timedelta(minutes=n)
        build = 60.0 if n < 5 else 0.5  # slow agents first, then quick ones
        pacing.dispatched(clock, start)
        pacing.committed(clock, start + timedelta(seconds=build))
        pacing.done(pace, clock, start + timedelta(seconds=build + 2))
    assert len(pace.builds) == pacing.SAMPLES
    assert in_flight_limit(pace, 8) == 1


def test_a_unit_is_counted_once_and_only_with_a_dispatch_and_a_commit() -> None:
    pace, clock = Pace(), pacing.UnitClock()
    pacing.committed(clock, T0)  # a commit with no dispatch seen: nothing to time from
    pacing.done(pace, clock, T0 + timedelta(seconds=1))
    assert pace == Pace()
    pacing.dispatched(clock, T0)
    pacing.committed(clock, T0 + timedelta(seconds=1))
    pacing.committed(clock, T0 + timedelta(seconds=5))  # sent back, committed again
    pacing.done(pace, clock, T0 + timedelta(seconds=7))
    pacing.done(pace, clock, T0 + timedelta(seconds=9))  # the same DONE seen twice
    assert pace == Pace(builds=[1.0], gates=[2.0])


def test_clocks_that_disagree_give_no_sample() -> None:
    pace, clock = Pace(), pacing.UnitClock()
    pacing.dispatched(clock, T0)
    pacing.committed(clock, T0 - timedelta(seconds=3))  # the units daemon's clock behind
    pacing.done(pace, clock, T0 + timedelta(seconds=1))
    assert pace == Pace()


def _run_to_done(d: PureDispatcher, unit_id: str, build_s: float, gate_s: float) -> None:
    """The unit's commit and DONE, timed from its dispatch as the fold reads them."""
    sent = [e for e in d.log if isinstance(e, UnitDispatched) and e.unit == unit_id][-1].at
    committed = sent + timedelta(seconds=build_s)
    d.apply(
        transition(P, unit_id, "working", by="commit", commit="c" * 40, at=committed),
        transition(P, unit_id, "done", by="merged", at=committed + timedelta(seconds=gate_s)),
    )


def test_quick_agents_are_dispatched_one_after_another_once_a_unit_is_done() -> None:
    d = PureDispatcher(P, capacity=2)
    d.apply(*accepted(P, plan("S1", *(unit(u) for u in ("A", "B", "C", "D")))))
    d.step()
    assert d.dispatched() == ["A", "B"]  # nothing measured yet: the capacity
    _run_to_done(d, "A", build_s=0.1, gate_s=1.5)
    d.step()
    assert d.dispatched() == ["A", "B"]  # B still in flight, and the pace is one at a time
    _run_to_done(d, "B", build_s=0.1, gate_s=1.5)
    d.step()
    assert d.dispatched() == ["A", "B", "C"]


def test_slow_agents_keep_the_whole_capacity() -> None:
    d = PureDispatcher(P, capacity=2)
    d.apply(*accepted(P, plan("S1", *(unit(u) for u in ("A", "B", "C", "D")))))
    d.step()
    _run_to_done(d, "A", build_s=30.0, gate_s=1.5)
    d.step()
    assert d.dispatched() == ["A", "B", "C"]


def test_without_pacing_the_capacity_is_filled_whatever_the_pace() -> None:
    d = PureDispatcher(P, capacity=2, paced=False)
    d.apply(*accepted(P, plan("S1", *(unit(u) for u in ("A", "B", "C", "D")))))
    d.step()
    _run_to_done(d, "A", build_s=0.1, gate_s=1.5)
    d.step()
    assert d.dispatched() == ["A", "B", "C"]


def test_a_unit_blocked_on_the_operator_does_not_stall_the_pace() -> None:
    d = PureDispatcher(P, capacity=2)
    d.apply(*accepted(P, plan("S1", *(unit(u) for u in ("A", "B", "C", "D")))))
    d.step()
    _run_to_done(d, "A", build_s=0.1, gate_s=1.5)  # the pace: one at a time
    d.step()
    assert d.dispatched() == ["A", "B"]
    d.apply(transition(P, "B", "blocked", by="escalated", block=Block("awaiting-operator", "f-1")))
    d.step()
    assert d.dispatched() == ["A", "B", "C"]  # B holds capacity, not the gates' turn
