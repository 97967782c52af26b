"""The ``budgets`` projection: the machinery budget of each slice, measured from the log.

Per slice it measures the gate suite's wall clock (the slowest suite run on a unit's
commit), tokens per delivered unit (builders' usage reports over units that reached
done), rework rounds (the most any unit was sent back), the gate cache hit rate, and the
time its dispatched units spent blocked, per reason. Each is compared with the limit the
slice's plan declared; a measure without a limit is shown and never breached.

Ceilings that only grow (wall clock, rework, wait) are judged as soon as they are
crossed; ratios that early numbers would mislead (tokens per delivered unit, cache hit
rate — the first run of every check is a miss) are judged when the slice closes.

Only facts are measured: a gate suite counts when the ``gates`` projection would accept
it (published by the system, signed by a registered runner key, signature verified —
:func:`projections.gates.judge`), and a breach counts as raised only by the system's own
``standards`` finding, so nobody can hide a breach by publishing a look-alike.
"""

from datetime import datetime

import msgspec

from projections import gates
from projections.base import Fold
from schemas import Event, FindingRaised, UnitTransitioned
from schemas.gates import GateRunnerKeyRegistered, GateSuiteCompleted
from schemas.reviews import RoundClosed, RoundUnchanged
from schemas.slices import (
    SliceBudgets,
    SliceClosed,
    SlicePlanAccepted,
    UnitDispatched,
    UsageReport,
)
from schemas.targets import BudgetTarget

REWORK_ACTIONS = frozenset({"continue", "promoted"})
"""Round outcomes that send a unit back to work: each is one rework round."""
REWORK_MOVES = frozenset({"returned", "retried"})
"""Transitions that send a unit back to work (a review or merge returned it, the
dispatcher retried it after a failure): each is one rework round too, as is a builder
round that changed nothing (``round.unchanged.v1``)."""


class UnitUse(msgspec.Struct, kw_only=True):
    tokens: int = 0
    rework: int = 0
    counted_round: str | None = None
    """The last round counted as rework: the ``returned`` transition a review round owes
    answers it, and sends the unit back once, not twice."""
    dispatched: bool = False
    state: str | None = None
    blocked_since: datetime | None = None
    blocked_reason: str | None = None


class SliceUse(msgspec.Struct, kw_only=True):
    slice: str
    budgets: SliceBudgets
    units: dict[str, UnitUse] = {}
    suites: int = 0
    suite_max_s: float = 0.0
    checks: int = 0
    cache_hits: int = 0
    wait_s: dict[str, float] = {}
    closed_at: datetime | None = None
    raised: list[str] = []


class BudgetsState(msgspec.Struct, kw_only=True):
    slices: dict[str, SliceUse] = {}
    unit_slice: dict[str, str] = {}
    runner_keys: gates.GatesState = msgspec.field(default_factory=gates.initial)
    """Runner key registrations only, folded by the gates projection's own rule."""


class Measure(msgspec.Struct, frozen=True, kw_only=True):
    """One budget of one slice: what was measured against what was allowed."""

    budget: str
    value: float | None
    limit: float | None
    kind: str  # "ceiling" or "floor"
    breached: bool
    detail: str


class Breach(msgspec.Struct, frozen=True, kw_only=True):
    slice: str
    budget: str
    value: float
    limit: float
    detail: str


def initial() -> BudgetsState:
    return BudgetsState()


def apply(state: BudgetsState, event: Event) -> BudgetsState:
    match event:
        case SlicePlanAccepted():
            fresh = SliceUse(slice=event.plan.slice, budgets=event.plan.budgets)
            for unit in event.plan.units:
                fresh.units[unit.id] = UnitUse()
                state.unit_slice[unit.id] = event.plan.slice
            state.slices[event.plan.slice] = fresh
        case UnitDispatched():
            found = _unit(state, event.unit)
            if found is not None:
                found[1].dispatched = True
        case UnitTransitioned():
            found = _unit(state, event.unit)
            if found is not None:
                _transition(found[0], found[1], event)
        case UsageReport():
            found = _unit(state, event.unit)
            if found is not None:
                found[1].tokens += event.tokens
        case RoundClosed():
            found = _unit(state, event.unit)
            if found is not None and event.action in REWORK_ACTIONS:
                found[1].rework += 1
                found[1].counted_round = event.id
        case RoundUnchanged():
            found = _unit(state, event.unit)
            if found is not None:
                found[1].rework += 1
        case GateRunnerKeyRegistered():
            gates.apply(state.runner_keys, event)
        case GateSuiteCompleted():
            found = _unit(state, event.unit) if event.unit else None
            if (
                found is not None
                and not event.error
                and gates.judge(state.runner_keys, event) is None
            ):
                ran = found[0]
                ran.suites += 1
                ran.suite_max_s = max(ran.suite_max_s, event.duration_s)
                ran.checks += len(event.checks)
                ran.cache_hits += sum(1 for entry in event.checks if entry.cached)
        case SliceClosed():
            use = state.slices.get(event.slice)
            if use is not None:
                use.closed_at = event.at
        case FindingRaised():
            use = state.slices.get(event.slice) if event.slice else None
            if (
                use is not None
                and event.actor.role == "system"
                and event.producer == "standards"
                and event.cls == "budget-breach"
                and isinstance(event.target, BudgetTarget)
                and event.target.budget not in use.raised
            ):
                use.raised.append(event.target.budget)
        case _:
            pass
    return state


def _unit(state: BudgetsState, unit_id: str) -> tuple[SliceUse, UnitUse] | None:
    slice_id = state.unit_slice.get(unit_id)
    use = state.slices.get(slice_id) if slice_id is not None else None
    unit = use.units.get(unit_id) if use is not None else None
    return (use, unit) if use is not None and unit is not None else None


def _transition(use: SliceUse, unit: UnitUse, event: UnitTransitioned) -> None:
    if unit.blocked_since is not None and unit.blocked_reason is not None:
        spent = max(0.0, (event.at - unit.blocked_since).total_seconds())
        use.wait_s[unit.blocked_reason] = use.wait_s.get(unit.blocked_reason, 0.0) + spent
    unit.blocked_since = unit.blocked_reason = None
    # Only a dispatched unit waits inside the run; a held, never-dispatched one is not
    # machinery time, it is the consequence of a failure the run record already shows.
    if event.state == "blocked" and event.block is not None and unit.dispatched:
        unit.blocked_since, unit.blocked_reason = event.at, event.block.reason
    if event.by in REWORK_MOVES and not (
        event.cause is not None and event.cause == unit.counted_round
    ):
        unit.rework += 1
    unit.state = event.state


FOLD = Fold(name="budgets", state_type=BudgetsState, initial=initial, apply=apply)


# -- queries ----------------------------------------------------------------------------


def wait_by_reason(use: SliceUse) -> dict[str, float]:
    """Seconds blocked per reason; spans still open count up to the close, if closed."""
    out = dict(use.wait_s)
    if use.closed_at is not None:
        for unit in use.units.values():
            if unit.blocked_since is not None and unit.blocked_reason is not None:
                spent = max(0.0, (use.closed_at - unit.blocked_since).total_seconds())
                out[unit.blocked_reason] = out.get(unit.blocked_reason, 0.0) + spent
    return out


def measures(use: SliceUse) -> list[Measure]:
    """Every budget of the slice with its measured value, limit and whether it is breached."""
    limits = use.budgets
    closed = use.closed_at is not None
    delivered = sum(1 for unit in use.units.values() if unit.state == "done")
    tokens = sum(unit.tokens for unit in use.units.values())
    out: list[Measure] = []

    suite = use.suite_max_s if use.suites else None
    out.append(
        _ceiling(
            "gate_wall_clock",
            suite,
            limits.gate_wall_clock_s,
            f"slowest of {use.suites} suite runs" if use.suites else "no suite has run",
        )
    )

    per_unit = tokens / delivered if delivered else None
    tokens_breached = False
    if closed and limits.tokens_per_unit is not None:
        if delivered:
            tokens_breached = per_unit is not None and per_unit > limits.tokens_per_unit
        else:
            tokens_breached = tokens > 0
    out.append(
        Measure(
            budget="tokens_per_unit",
            value=per_unit if delivered else (float(tokens) if tokens else None),
            limit=float(limits.tokens_per_unit) if limits.tokens_per_unit is not None else None,
            kind="ceiling",
            breached=tokens_breached,
            detail=(
                f"{tokens} tokens over {delivered} delivered units"
                if delivered
                else f"{tokens} tokens and no unit delivered"
            ),
        )
    )

    rework = max((unit.rework for unit in use.units.values()), default=0)
    out.append(
        _ceiling(
            "rework_rounds",
            float(rework),
            float(limits.rework_rounds) if limits.rework_rounds is not None else None,
            "most rework rounds of any unit",
        )
    )

    rate = use.cache_hits / use.checks if use.checks else None
    out.append(
        Measure(
            budget="cache_hit_rate",
            value=rate,
            limit=limits.cache_hit_rate,
            kind="floor",
            breached=bool(
                closed
                and rate is not None
                and limits.cache_hit_rate is not None
                and rate < limits.cache_hit_rate
            ),
            detail=f"{use.cache_hits} of {use.checks} check results from cache",
        )
    )

    waits = wait_by_reason(use)
    total_wait = sum(waits.values())
    out.append(
        _ceiling(
            "wait",
            total_wait,
            limits.wait_s,
            ", ".join(f"{reason} {seconds:.1f}s" for reason, seconds in sorted(waits.items()))
            or "no unit has waited",
        )
    )
    return out


def _ceiling(budget: str, value: float | None, limit: float | None, detail: str) -> Measure:
    return Measure(
        budget=budget,
        value=value,
        limit=limit,
        kind="ceiling",
        breached=value is not None and limit is not None and value > limit,
        detail=detail,
    )


def breaches(state: BudgetsState) -> list[Breach]:
    """Breaches no standards finding has been raised for yet, one per slice and budget."""
    out: list[Breach] = []
    for slice_id in sorted(state.slices):
        use = state.slices[slice_id]
        for measure in measures(use):
            if not measure.breached or measure.budget in use.raised or measure.limit is None:
                continue
            out.append(
                Breach(
                    slice=slice_id,
                    budget=measure.budget,
                    value=measure.value if measure.value is not None else 0.0,
                    limit=measure.limit,
                    detail=measure.detail,
                )
            )
    return out
