"""Pacing: how many units to keep moving at once so that the gates are not asked for more
than they can do.

A unit's cycle is the time its agents take (the builder's turn, dispatch -> its last
accepted commit, and the reviewers' turns, each review asked -> its verdict accepted) plus
the time the gates take on it (the wall time of every suite run for it, as the gate runner
signed it). While one unit is at the gates, the others can only build or be reviewed: ``n``
units moving at once ask the gates for ``n * gate`` seconds in every ``agents + gate``,
which the gates can give while ``n <= 1 + agents / gate``. More than that and commits meet
at the gates, which is worse than waiting: whichever lands second finds trunk moved under
its own suite, so its merge candidate is a new tree that runs the whole suite again, on
the same cores.

So the dispatcher keeps at most ``1 + floor(agents / gate)`` units moving (never more than
its capacity, never fewer than one), with ``agents`` and ``gate`` the medians of the last
:data:`SAMPLES` units the project took to DONE. Agents that take no time get one unit at a
time; agents that take as long as the gates, two; agents that take minutes against a suite
of seconds, the whole capacity. Time a unit spends waiting (for the operator, for a gate
slot, in the merge queue) is in neither measure, so waiting never widens nor narrows the
pace. Until one unit has reached DONE with its dispatch and a commit on the log, or while
the gates answer everything from their cache (a gate median of 0), the capacity alone
applies: a slow first agent must not build alone, and gates that do no work need no pace.

The samples are read from the log's own facts (the dispatcher's ``unit.dispatched``, the
units daemon's transitions, the system's review requests and accepted verdicts, the signed
suites), with the times those facts carry: pure, the same on replay. The builder's turn
spans two daemons' clocks (the dispatcher's, the units daemon's), as a lease does; keep the
machines' clocks within a few seconds of each other. Pacing only orders work: no fact
depends on it.
"""

import statistics
from datetime import datetime

import msgspec

SAMPLES = 9
"""How many of the latest units to DONE the medians are taken over: enough that one odd
unit does not swing them, few enough to follow a change in the agents or the checks."""


class Pace(msgspec.Struct, kw_only=True):
    """Seconds the latest units to DONE took, per kind of work (newest last, at most
    SAMPLES each)."""

    agents: list[float] = []
    gates: list[float] = []


class UnitClock(msgspec.Struct, kw_only=True):
    """What the unit's current attempt has taken so far."""

    started: datetime | None = None
    """Its dispatch, or its move back to work after a retry."""
    last_commit: datetime | None = None
    review_asked: datetime | None = None
    review_s: float = 0.0
    gate_s: float = 0.0


def started(clock: UnitClock, at: datetime) -> None:
    """A dispatch or a retry: a new attempt, timed afresh."""
    clock.started, clock.last_commit, clock.review_asked = at, None, None
    clock.review_s = clock.gate_s = 0.0


def committed(clock: UnitClock, at: datetime) -> None:
    if clock.started is not None:
        clock.last_commit = at


def review_asked(clock: UnitClock, at: datetime) -> None:
    if clock.started is not None:
        clock.review_asked = at


def review_answered(clock: UnitClock, at: datetime) -> None:
    if clock.review_asked is not None:
        clock.review_s += max((at - clock.review_asked).total_seconds(), 0.0)
        clock.review_asked = None


def gated(clock: UnitClock, duration_s: float) -> None:
    if clock.started is not None:
        clock.gate_s += duration_s


def done(pace: Pace, clock: UnitClock) -> None:
    """Record the attempt's agent and gate time, once, if its start and a commit were seen."""
    begun, last = clock.started, clock.last_commit
    clock.started = None
    if begun is None or last is None:
        return
    build = (last - begun).total_seconds()
    if build < 0:  # two daemons' clocks disagreeing: no sample
        return
    pace.agents = [*pace.agents, build + clock.review_s][-SAMPLES:]
    pace.gates = [*pace.gates, clock.gate_s][-SAMPLES:]


def moving_limit(pace: Pace, capacity: int) -> int:
    """The most units to keep building, in review or at the gates at once (see the
    module's docstring)."""
    if not pace.agents or not pace.gates:
        return capacity
    agents, gate = statistics.median(pace.agents), statistics.median(pace.gates)
    if gate <= 0:
        return capacity
    return max(1, min(capacity, 1 + int(agents // gate)))
