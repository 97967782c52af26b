"""Pacing on a real bus: a slice of four units with agents that take no time and a check
that takes seconds, through every daemon as `loopbus up` runs them (the loop benchmark's own
project and harness). Once a unit is DONE the pace is one unit at a time, so no unit is
dispatched while another is still moving; without pacing the capacity of two is kept full."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_loop_overhead as bench

from schemas import Event, UnitTransitioned
from schemas.slices import SliceClosed, UnitDispatched

pytestmark = pytest.mark.slow

UNITS = 4
TEST_WORK_S = 0.5
"""CPU each unit's test spends: the check takes about 2 s, the agents a fraction of that."""


def dispatched_while_moving(events: list[Event]) -> list[tuple[str, list[str]]]:
    """Each dispatch after the first DONE, with the units still moving when it was made."""
    moving: list[str] = []
    seen_done = False
    found = []
    for event in events:
        if isinstance(event, UnitDispatched):
            if seen_done and moving:
                found.append((event.unit, list(moving)))
            moving.append(event.unit)
        elif isinstance(event, UnitTransitioned) and event.state == "done":
            seen_done = True
            if event.unit in moving:
                moving.remove(event.unit)
    return found


def run(tmp_path: Path, paced: bool) -> list[Event]:
    repo = bench.project(tmp_path, UNITS, 'sandbox = "none"\n', 0.0, TEST_WORK_S)
    return asyncio.run(bench.run_slice(tmp_path, repo, UNITS, 300, None, 2, paced))


def test_quick_agents_are_paced_to_one_unit_at_a_time_once_one_is_done(tmp_path: Path) -> None:
    events = run(tmp_path, paced=True)
    closed = events[-1]
    assert isinstance(closed, SliceClosed) and len(closed.done) == UNITS, closed
    first_two = [e.unit for e in events if isinstance(e, UnitDispatched)][:2]
    assert first_two == ["m00", "m01"]  # nothing measured yet: the capacity of two
    assert dispatched_while_moving(events) == []


def test_without_pacing_a_unit_is_dispatched_while_another_moves(tmp_path: Path) -> None:
    """The same slice with --no-pace: what the test above rules out does happen."""
    events = run(tmp_path, paced=False)
    assert isinstance(events[-1], SliceClosed)
    assert dispatched_while_moving(events) != []
