"""Where a unit's dispatch -> DONE goes, read from the log of a run (no clock of our own).

Every figure comes from facts the daemons published, so the same breakdown can be made
from any run's log. Per unit:

* **agents**: the builder's turn (``unit.dispatched`` to the commit the units daemon
  accepted) and the reviewer's turn (``review.requested`` to ``review.verdict``), each with
  the daemon work around the agent's run (worktree, commit, copy of the head);
* **gates**: for each suite on the unit's path (its commit, the candidate that landed,
  trunk after the advance), the longest check that actually ran (a suite runs its checks
  side by side, so that is the wall it took; a check answered from the cache costs none);
* **queueing**: waiting for a gate slot (commit accepted -> its suite started) and in the
  merge queue (``merge.queued`` -> the landed candidate's suite started: the units ahead
  landing, a candidate stacked on one that moved);
* **daemons and git**: the rest (hops between daemons, checkouts and cache lookups inside a
  suite, merging, moving trunk).

Gate runs are counted from ``gate.result_recorded`` facts (one per check actually run;
a check answered from the cache records none), by what they gated: the unit's commit,
its candidate before the advance, trunk after it (a unit's suite run on its merge onto
trunk counts as the unit's, by the tree it names); runs on commits no unit owns (trunk at
start, candidates dropped before they were recorded) are counted apart.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from schemas import Event, UnitTransitioned
from schemas.gates import GateResultRecorded, GateSuiteCompleted
from schemas.merges import CandidateTested, MergeQueued, TrunkAdvanced
from schemas.reviews import ReviewRequested, ReviewVerdict
from schemas.slices import UnitDispatched

STAGES = ("unit", "candidate", "trunk")


@dataclass
class UnitTimes:
    """One unit's marks (seconds since the epoch) and its gate runs by stage."""

    dispatched: float | None = None
    accepted: float | None = None
    review_requested: float | None = None
    verdict: float | None = None
    queued: float | None = None
    done: float | None = None
    suites: list[GateSuiteCompleted] = field(default_factory=list)
    """The suites on the unit's path (its commit, its landed candidate, trunk after it)."""
    runs: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STAGES, 0))


@dataclass(frozen=True)
class Breakdown:
    """Per unit: seconds by category, and gate runs by stage; runs no unit owns."""

    total: dict[str, float]
    parts: dict[str, dict[str, float]]
    runs: dict[str, dict[str, int]]
    other_runs: int
    suites_reused: int
    suites: int


def start_of(suite: GateSuiteCompleted) -> float:
    return suite.at.timestamp() - suite.duration_s


def ran_for(suite: GateSuiteCompleted) -> float:
    """The wall its checks that actually ran took (they run side by side)."""
    return max((c.duration_s for c in suite.checks if not c.cached), default=0.0)


def breakdown(events: Iterable[Event]) -> Breakdown:
    units: dict[str, UnitTimes] = {}
    owner: dict[str, tuple[str, str]] = {}  # commit -> (unit, stage)
    suites: dict[str, list[GateSuiteCompleted]] = {}  # commit -> suites, in log order
    results: list[tuple[int, GateResultRecorded]] = []
    advanced_at: dict[str, int] = {}  # merge commit -> log position of its advance
    landed: dict[str, str] = {}  # unit -> merge commit
    for position, event in enumerate(events):
        unit = getattr(event, "unit", None)
        view = units.setdefault(unit, UnitTimes()) if isinstance(unit, str) else None
        at = event.at.timestamp()
        match event:
            case UnitDispatched() if view is not None and view.dispatched is None:
                view.dispatched = at
            case UnitTransitioned(by="commit", commit=str(commit)) if view is not None:
                view.accepted = at  # the latest commit is the one that lands
                owner[commit] = (event.unit, "unit")
            case UnitTransitioned(state="done") if view is not None:
                view.done = at
            case ReviewRequested() if view is not None and view.review_requested is None:
                view.review_requested = at
            case ReviewVerdict() if view is not None and view.verdict is None:
                view.verdict = at
            case MergeQueued() if view is not None:
                view.queued = at
            case CandidateTested(stage="candidate", unit=str(u)):
                owner.setdefault(event.candidate, (u, "candidate"))
            case TrunkAdvanced():
                owner[event.merge] = (event.unit, "candidate")
                advanced_at[event.merge] = position
                landed[event.unit] = event.merge
            case GateSuiteCompleted(commit=str(commit)):
                suites.setdefault(commit, []).append(event)
            case GateResultRecorded():
                results.append((position, event))
    # A unit's suite run on its merge onto trunk (``onto``) records its results on that
    # merge, a commit no ref points at: they are the unit's runs, found by the tree tested.
    on_trunk = {
        s.tree: (s.unit, "unit")
        for found in suites.values()
        for s in found
        if getattr(s, "onto", None) and s.unit and s.tree and s.reason == "unit"
    }
    other = 0
    for position, result in results:
        found = owner.get(result.commit or "") or on_trunk.get(result.tree)
        if found is None or found[0] not in units:
            other += 1
            continue
        unit, stage = found
        if stage == "candidate" and position > advanced_at.get(result.commit or "", position):
            stage = "trunk"
        units[unit].runs[stage] += 1
    reused = total_suites = 0
    for commit, found in suites.items():
        for suite in found:
            total_suites += 1
            reused += all(c.cached for c in suite.checks) and bool(suite.checks)
        owned = owner.get(commit)
        if owned is not None and owned[0] in units:
            units[owned[0]].suites.extend(found)
    return _per_unit(units, suites, landed, other, reused, total_suites)


def _per_unit(
    units: dict[str, UnitTimes],
    suites: dict[str, list[GateSuiteCompleted]],
    landed: dict[str, str],
    other: int,
    reused: int,
    total_suites: int,
) -> Breakdown:
    total: dict[str, float] = {}
    parts: dict[str, dict[str, float]] = {}
    runs: dict[str, dict[str, int]] = {}
    for unit, view in units.items():
        if view.dispatched is None or view.done is None or view.accepted is None:
            continue
        total[unit] = view.done - view.dispatched
        agents = view.accepted - view.dispatched
        if view.review_requested is not None and view.verdict is not None:
            agents += view.verdict - view.review_requested
        own = [s for s in view.suites if s.unit == unit and s.reason == "unit"]
        merge = landed.get(unit)
        path = [*own[-1:], *suites.get(merge or "", [])]
        gates = sum(ran_for(s) for s in path)
        queueing = max(start_of(own[-1]) - view.accepted, 0.0) if own else 0.0
        merged = suites.get(merge or "", [])
        if merged and view.queued is not None:
            queueing += max(start_of(merged[0]) - view.queued, 0.0)
        rest = total[unit] - agents - gates - queueing
        parts[unit] = {
            "agents": agents,
            "gates": gates,
            "queueing": queueing,
            "daemons and git": rest,
        }
        runs[unit] = dict(view.runs)
    return Breakdown(total, parts, runs, other, reused, total_suites)


def report(found: Breakdown) -> list[str]:
    """The lines the benchmark prints (medians per unit)."""
    if not found.parts:
        return ["no unit reached DONE: nothing to break down"]
    median = statistics.median
    names = list(next(iter(found.parts.values())))
    shares = ", ".join(
        f"{name} {median(p[name] for p in found.parts.values()):.2f}s" for name in names
    )
    per_stage = ", ".join(
        f"{stage} {median(r[stage] for r in found.runs.values()):.0f} "
        f"(max {max(r[stage] for r in found.runs.values())})"
        for stage in STAGES
    )
    counts = [sum(r.values()) for r in found.runs.values()]
    return [
        f"breakdown per unit (medians): {shares}",
        f"gate runs per unit (checks actually run): median {median(counts):.0f}, "
        f"max {max(counts)}; by stage: {per_stage}",
        f"gate runs on commits no unit owns: {found.other_runs}; suites answered wholly "
        f"from the cache: {found.suites_reused} of {found.suites}",
    ]
