"""`status --waiting` names the ready units that wait for an approval: a unit that is not
blocked may still be waiting, on a reviewer or on the operator."""

from __future__ import annotations

from loopbus.units_status import awaiting_approval, render_waiting
from projections.units import UnitsState, UnitView


def test_a_ready_unit_is_shown_waiting_for_an_approval() -> None:
    state = UnitsState(
        units={
            "todict": UnitView(unit="todict", slice="S1", state="working", ready=True),
            "parse": UnitView(unit="parse", slice="S1", state="working", ready=False),
            "shipped": UnitView(unit="shipped", slice="S1", state="done", ready=True),
        }
    )
    assert awaiting_approval(state) == ["todict"]
    lines = render_waiting(state)
    assert lines[0] == "waiting on nothing: no unit is blocked"
    assert "awaiting an approval" in lines[1] and lines[1].endswith(": todict")
    assert "loopbus approve" in lines[1]


def test_nothing_ready_says_only_that_nothing_is_blocked() -> None:
    state = UnitsState(units={"parse": UnitView(unit="parse", slice="S1", state="working")})
    assert render_waiting(state) == ["waiting on nothing: no unit is blocked"]
