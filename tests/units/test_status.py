"""How `loopbus status` shows units: by state, what blocked units wait on and for how long,
what lost units last said, and the run's waits grouped by subject."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from loopbus.units_status import duration, render_units, render_waiting, waiting
from projections import units as units_fold
from schemas import Actor, Block, Event, Outcome, UnitPlanned, UnitTransitioned

SYSTEM = Actor(role="system", principal="t")
T0 = datetime(2030, 1, 1, tzinfo=UTC)


def _move(unit: str, state: str, prior: str | None, at: int, **kw: object) -> UnitTransitioned:
    return UnitTransitioned(
        project="p",
        actor=SYSTEM,
        unit=unit,
        state=state,  # type: ignore[arg-type]
        prior=prior,  # type: ignore[arg-type]
        at=T0 + timedelta(seconds=at),
        **kw,  # type: ignore[arg-type]
    )


def _state() -> units_fold.UnitsState:
    events: list[Event] = [
        UnitPlanned(project="p", actor=SYSTEM, unit=u, slice="S1", at=T0)
        for u in ("U1", "U2", "U3", "U4", "U5", "U6")
    ]
    dep = Block(reason="awaiting-dependency", subject="U3")
    events += [
        _move("U1", "working", None, 0, by="started"),
        _move("U1", "blocked", "working", 10, by="blocked", block=dep),
        _move("U2", "working", None, 0, by="started"),
        _move("U2", "blocked", "working", 100, by="blocked", block=dep),
        _move("U3", "working", None, 0, by="started"),
        _move("U3", "working", "working", 5, by="gates", ready=True, commit="a" * 40),
        _move("U4", "working", None, 0, by="started"),
        _move(
            "U4",
            "lost",
            "working",
            400,
            by="heartbeat-lapse",
            outcome=Outcome(
                summary="silent", ended_by="heartbeat-lapse", last_heartbeat=T0, lapse_s=90.0
            ),
        ),
        _move("U5", "working", None, 0, by="started"),
        _move(
            "U5",
            "failed",
            "working",
            50,
            by="gave-up",
            outcome=Outcome(summary="no such API", ended_by="gave-up"),
        ),
    ]
    return units_fold.FOLD.fold(events)


def test_units_render_by_state_with_waits_and_last_heartbeats() -> None:
    """Status groups units by state, with each block's wait, each loss's last heartbeat."""
    lines = render_units(_state(), now=T0 + timedelta(seconds=130))
    text = "\n".join(lines)
    groups = [line.strip() for line in lines if line.startswith("  ") and "(" in line[:20]]
    assert groups[:5] == ["planned (1)", "working (1)", "blocked (2)", "failed (1)", "lost (1)"]
    assert "    U1  awaiting-dependency -> U3, waiting 2m00s" in text
    assert "    U2  awaiting-dependency -> U3, waiting 30s" in text
    assert "    U3  ready, head aaaaaaaaaaaa" in text
    assert "    U4  last heartbeat 2030-01-01 00:00:00Z, lapse 90s" in text
    assert "    U5  gave-up: no such API" in text
    assert "  time in wait, slice S1: awaiting-dependency 2m30s" in text


def test_waiting_groups_blocked_units_by_subject_longest_first() -> None:
    """`--waiting` groups blocked units by subject, longest wait first."""
    now = T0 + timedelta(seconds=130)
    [group] = waiting(_state(), now)
    assert (group["reason"], group["subject"]) == ("awaiting-dependency", "U3")
    assert [(u["unit"], u["waited_s"]) for u in group["units"]] == [("U1", 120.0), ("U2", 30.0)]
    assert render_waiting(_state(), now) == [
        "waiting on 1 subject(s):",
        "  awaiting-dependency U3: U1 (2m00s), U2 (30s)",
        # U3 is ready: the units waiting on it wait, in turn, on its approval.
        "  ready, awaiting an approval (a reviewer's verdict, or `loopbus approve --unit U "
        "--why ...` where no reviewer is configured): U3",
    ]
    assert render_waiting(units_fold.initial(), now) == ["waiting on nothing: no unit is blocked"]


def test_durations_read_as_people_write_them() -> None:
    """Seconds, minutes, hours and days, two units at most."""
    assert [duration(s) for s in (0, 42, 185, 7620, 97200)] == [
        "0s",
        "42s",
        "3m05s",
        "2h07m",
        "1d03h",
    ]
