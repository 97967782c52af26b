"""Pacing: how many units to keep in flight so that they reach the gates one after another.

A unit in flight spends its time in two stages: its builder's turn (dispatch -> the first
commit the units daemon accepts) and the gates' turn (its last commit -> DONE: its suite,
its review, its merge candidate, trunk). Two units in the gates' turn at once cost more
than twice the work of one: whichever lands second finds trunk moved under its own suite,
so its merge candidate is a new tree and runs its whole suite again, on the same cores.

With ``n`` units building at once, a commit reaches the gates every ``build / n`` seconds
on average, and the gates take ``gate`` seconds a unit; they never hold two units at once
while ``n <= build / gate``. So the dispatcher keeps at most ``max(1, floor(build /
gate))`` units in flight (and never more than its capacity), with ``build`` and ``gate``
the medians of the last :data:`SAMPLES` units this project took to DONE. With agents that
take no time this is one unit at a time; with agents that take ten times a unit's gate
turn it is the whole capacity. Until one unit has reached DONE nothing is known and the
capacity alone applies (a slow agent must not build alone just because it is the first).

The samples are read from the log's own facts (the dispatcher's ``unit.dispatched``, the
units daemon's transitions), with the times those facts carry: pure, the same on replay.
Pacing only orders work; no fact depends on it.
"""

import statistics
from datetime import datetime

import msgspec

SAMPLES = 9
"""How many of the latest units to DONE the medians are taken over: enough that one odd
unit does not swing them, few enough to follow a change in the agents or the checks."""


class Pace(msgspec.Struct, kw_only=True):
    """Seconds the latest units to DONE took, per stage (newest last, at most SAMPLES)."""

    builds: list[float] = []
    gates: list[float] = []


class UnitClock(msgspec.Struct, kw_only=True):
    """When the unit's latest dispatch started, first reached the gates, last did."""

    dispatched: datetime | None = None
    first_commit: datetime | None = None
    last_commit: datetime | None = None


def dispatched(clock: UnitClock, at: datetime) -> None:
    clock.dispatched, clock.first_commit, clock.last_commit = at, None, None


def committed(clock: UnitClock, at: datetime) -> None:
    if clock.dispatched is None:
        return
    if clock.first_commit is None:
        clock.first_commit = at
    clock.last_commit = at


def done(pace: Pace, clock: UnitClock, at: datetime) -> None:
    """Record the unit's two turns, once, if its dispatch and a commit were seen."""
    started, first, last = clock.dispatched, clock.first_commit, clock.last_commit
    clock.dispatched = clock.first_commit = clock.last_commit = None
    if started is None or first is None or last is None:
        return
    build = (first - started).total_seconds()
    gate = (at - last).total_seconds()
    if build < 0 or gate < 0:  # clocks of two machines disagreeing: no sample
        return
    pace.builds = [*pace.builds, build][-SAMPLES:]
    pace.gates = [*pace.gates, gate][-SAMPLES:]


def in_flight_limit(pace: Pace, capacity: int) -> int:
    """The most units to keep in flight: the capacity, lowered so commits do not queue at
    the gates (see the module's docstring)."""
    if not pace.builds or not pace.gates:
        return capacity
    build, gate = statistics.median(pace.builds), statistics.median(pace.gates)
    if gate <= 0:
        return capacity
    return max(1, min(capacity, int(build // gate)))
