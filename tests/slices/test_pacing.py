"""Pacing: the dispatcher keeps no more units moving than the gates can take while the others
are with their agents, so that quick agents' commits do not meet at the gates (where the
second one's merge candidate runs its suite again), and the whole capacity when agents are
slower than the gates."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from slice_helpers import (
    PureDispatcher,
    accepted,
    gate_suite,
    plan,
    registration,
    transition,
    unit,
)

from loopbus.cli import build_parser
from loopbus.supervisor import DAEMONS, UpSettings
from projections import pacing, slice_dispatch
from projections.pacing import Pace, UnitClock, moving_limit
from schemas import Actor, Block
from schemas.reviews import ReviewRequested, VerdictAccepted
from schemas.slices import UnitDispatched
from workers.gates.signing import Signer

P = "p1"
T0 = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
SYSTEM = Actor(role="system", principal="tests")


def test_without_samples_the_capacity_alone_applies() -> None:
    assert moving_limit(Pace(), 4) == 4


def test_agents_quicker_than_the_gates_get_one_unit_at_a_time() -> None:
    assert moving_limit(Pace(agents=[0.1, 0.2, 0.1], gates=[1.3, 1.2, 1.5]), 4) == 1


def test_agents_as_slow_as_the_gates_get_one_building_while_one_is_gated() -> None:
    assert moving_limit(Pace(agents=[2.0, 2.0, 2.0], gates=[2.0, 2.0, 2.0]), 4) == 2


def test_agents_slower_than_the_gates_get_as_many_as_the_gates_take_in_turn() -> None:
    pace = Pace(agents=[10.0, 12.0, 9.0], gates=[3.0, 3.5, 2.5])
    assert moving_limit(pace, 8) == 4  # 1 at the gates while 3 are with their agents
    assert moving_limit(pace, 2) == 2  # never above the capacity


def test_gates_answering_from_their_cache_set_no_pace() -> None:
    assert moving_limit(Pace(agents=[0.1], gates=[0.0]), 3) == 3


def _attempt(pace: Pace, start: datetime, build: float, review: float, gate: float) -> None:
    clock = UnitClock()
    pacing.started(clock, start)
    pacing.committed(clock, start + timedelta(seconds=build))
    pacing.gated(clock, gate)
    pacing.review_asked(clock, start + timedelta(seconds=build + gate))
    pacing.review_answered(clock, start + timedelta(seconds=build + gate + review))
    pacing.done(pace, clock)


def test_the_medians_follow_the_latest_units_only() -> None:
    pace = Pace()
    for n in range(pacing.SAMPLES + 5):
        slow = n < 5  # slow agents first, then quick ones
        _attempt(pace, T0 + timedelta(minutes=n), 60.0 if slow else 0.1, 0.05, 1.0)
    assert len(pace.agents) == len(pace.gates) == pacing.SAMPLES
    assert moving_limit(pace, 8) == 1


def test_review_time_is_agents_time() -> None:
    pace = Pace()
    _attempt(pace, T0, build=1.0, review=120.0, gate=20.0)
    assert pace == Pace(agents=[121.0], gates=[20.0])
    assert moving_limit(pace, 8) == 7


def test_an_attempt_is_counted_once_and_only_with_a_start_and_a_commit() -> None:
    pace, clock = Pace(), UnitClock()
    pacing.committed(clock, T0)  # a commit with no dispatch seen: nothing to time from
    pacing.done(pace, clock)
    assert pace == Pace()
    pacing.started(clock, T0)
    pacing.committed(clock, T0 + timedelta(seconds=1))
    pacing.committed(clock, T0 + timedelta(seconds=5))  # sent back, committed again
    pacing.gated(clock, 0.5)
    pacing.done(pace, clock)
    pacing.done(pace, clock)  # the same DONE seen twice
    assert pace == Pace(agents=[5.0], gates=[0.5])


def test_clocks_that_disagree_give_no_sample() -> None:
    pace, clock = Pace(), UnitClock()
    pacing.started(clock, T0)
    pacing.committed(clock, T0 - timedelta(seconds=3))  # the units daemon's clock behind
    pacing.done(pace, clock)
    assert pace == Pace()


def _sent(d: PureDispatcher, unit_id: str) -> datetime:
    return [e for e in d.log if isinstance(e, UnitDispatched) and e.unit == unit_id][-1].at


def _run_to_done(
    d: PureDispatcher, signer: Signer, unit_id: str, build_s: float, gate_s: float
) -> None:
    """The unit's commit, its signed suite, a review, DONE: as the fold reads them."""
    committed = _sent(d, unit_id) + timedelta(seconds=build_s)
    d.apply(
        transition(P, unit_id, "working", by="commit", commit="c" * 40, at=committed),
        gate_suite(signer, P, unit_id, seconds=gate_s, cached=[False]),
        review(unit_id, committed + timedelta(seconds=gate_s)),
        verdict(unit_id, committed + timedelta(seconds=gate_s)),
        transition(P, unit_id, "done", by="merged", at=committed + timedelta(seconds=gate_s)),
    )


def verdict(unit_id: str, at: datetime) -> VerdictAccepted:
    return VerdictAccepted(
        project=P, actor=SYSTEM, unit=unit_id, verdict="v", request="q", reviewer="r1",
        decision="approve", claimed="approve", round=1, head="c" * 40, cause="q", at=at,
    )  # fmt: skip


def review(unit_id: str, at: datetime) -> ReviewRequested:
    return ReviewRequested(
        project=P, actor=SYSTEM, unit=unit_id, round=1, head="c" * 40, base="b" * 40,
        reviewer="r1", diff_digest="d", cause="t", at=at,
    )  # fmt: skip


def _slice(signer: Signer, capacity: int = 2, paced: bool = True) -> PureDispatcher:
    d = PureDispatcher(P, capacity=capacity, paced=paced)
    d.apply(
        registration(P, signer),
        *accepted(P, plan("S1", *(unit(u) for u in ("A", "B", "C", "D")))),
    )
    d.step()
    return d


def test_quick_agents_are_dispatched_one_after_another_once_a_unit_is_done(
    signer: Signer,
) -> None:
    d = _slice(signer)
    assert d.dispatched() == ["A", "B"]  # nothing measured yet: the capacity
    _run_to_done(d, signer, "A", build_s=0.1, gate_s=1.5)
    assert d.state.pace == Pace(agents=[0.1], gates=[1.5])
    d.step()
    assert d.dispatched() == ["A", "B"]  # B still moving, and the pace is one at a time
    _run_to_done(d, signer, "B", build_s=0.1, gate_s=1.5)
    d.step()
    assert d.dispatched() == ["A", "B", "C"]


def test_slow_agents_keep_the_whole_capacity(signer: Signer) -> None:
    d = _slice(signer)
    _run_to_done(d, signer, "A", build_s=30.0, gate_s=1.5)
    d.step()
    assert d.dispatched() == ["A", "B", "C"]


def test_without_pacing_the_capacity_is_filled_whatever_the_pace(signer: Signer) -> None:
    d = _slice(signer, paced=False)
    _run_to_done(d, signer, "A", build_s=0.1, gate_s=1.5)
    d.step()
    assert d.dispatched() == ["A", "B", "C"]


def test_a_unit_blocked_on_the_operator_does_not_stall_the_pace(signer: Signer) -> None:
    d = _slice(signer)
    _run_to_done(d, signer, "A", build_s=0.1, gate_s=1.5)  # the pace: one at a time
    d.step()
    assert d.dispatched() == ["A", "B"]
    d.apply(transition(P, "B", "blocked", by="escalated", block=Block("awaiting-operator", "f")))
    d.step()
    assert d.dispatched() == ["A", "B", "C"]  # B holds capacity, not the gates' turn


def test_an_unsigned_suite_does_not_count_as_gate_time(signer: Signer) -> None:
    d = _slice(signer)
    committed = _sent(d, "A") + timedelta(seconds=0.1)
    d.apply(
        transition(P, "A", "working", by="commit", commit="c" * 40, at=committed),
        gate_suite(
            None, P, "A", seconds=500.0, cached=[False]
        ),  # anyone can publish an unsigned one
        transition(P, "A", "done", by="merged", at=committed + timedelta(seconds=1)),
    )
    assert d.state.pace == Pace(agents=[0.1], gates=[0.0])


def test_a_held_dispatch_takes_no_place(signer: Signer) -> None:
    d = _slice(signer)
    _run_to_done(d, signer, "A", build_s=0.1, gate_s=1.5)
    _run_to_done(d, signer, "B", build_s=0.1, gate_s=1.5)  # the pace: one at a time
    actions = slice_dispatch.next_actions(d.state, 2, held=lambda dispatch: dispatch.unit == "C")
    assert [a.unit for a in actions if isinstance(a, slice_dispatch.Dispatch)] == ["D"]


def test_no_pace_reaches_the_dispatcher_from_loopbus_up(tmp_path: Path) -> None:
    assert build_parser().parse_args(["up"]).paced is True
    assert build_parser().parse_args(["up", "--no-pace"]).paced is False
    [spec] = [d for d in DAEMONS if d.name == "dispatcher"]
    settings = UpSettings(nats_url="nats://x:1", data_dir=tmp_path, heartbeat_lapse="5m")
    assert "--no-pace" not in spec.args(settings)
    assert "--no-pace" in spec.args(dataclasses.replace(settings, paced=False))
    shown = subprocess.run(
        [sys.executable, "-m", "workers.dispatcher", "--help"], capture_output=True, text=True
    )
    assert shown.returncode == 0 and "--no-pace" in shown.stdout


def test_a_retry_is_timed_afresh(signer: Signer) -> None:
    d = _slice(signer)
    sent = _sent(d, "A")
    retried = sent + timedelta(seconds=600)
    d.apply(
        transition(P, "A", "working", by="commit", commit="c" * 40, at=sent),
        transition(P, "A", "failed", by="gave-up", at=sent + timedelta(seconds=1)),
        transition(P, "A", "working", by="retried", at=retried),
        transition(P, "A", "working", by="commit", commit="e" * 40, at=retried),
        gate_suite(signer, P, "A", seconds=1.0, cached=[False]),
        transition(P, "A", "done", by="merged", at=retried + timedelta(seconds=1)),
    )
    assert d.state.pace == Pace(agents=[0.0], gates=[1.0])
