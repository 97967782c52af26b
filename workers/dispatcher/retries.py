"""A failed unit tried again along the escalation ladder. Pure: over the folds, no I/O.

When a dispatched unit fails in a way a retry may answer
(:data:`projections.slices.RETRYABLE_ENDINGS`: its builder gave up, or the
progress test stopped it at oversight ``full``), the dispatcher answers the failure with a
``unit.retry_decided.v1`` fact, and nothing else of the slice moves past the unit until it
has (:func:`projections.slices.awaiting_retry`):

* **retried** on the next rung when the unit's rung is below the last one (4) and the
  slice's budget allows it: no ceiling budget of the slice is breached (gate suite wall
  clock, rework rounds, wait) and the unit has rework rounds left under ``rework_rounds``.
  The unit then moves ``failed -> working`` by ``retried`` (naming the decision), and the
  builder runs its next round on the new rung, told why in the brief's ``problem``;
* **not retried** otherwise, with the reason (the ladder is spent, which budget is): the
  unit stays failed, its run-record entry completes and its slice may close.

Each retry climbs a rung, so a unit is retried at most three times (from rung 1).
"""

from __future__ import annotations

from dataclasses import dataclass

from projections import budgets, claims, round_rules
from projections import convergence as conv
from projections.intents import Publishing
from projections.slice_dispatch import Retry, Revive
from projections.slices import SliceView
from projections.units import UnitsState
from schemas.ids import answer_id
from schemas.slices import RetryDecided
from workers.kernel import World

FOLDS = (budgets.FOLD, conv.FOLD)
"""What the retry decision reads beyond the dispatcher's own folds."""

ENDINGS = {
    "gave-up": "the builder gave up",
    "progress-test": "the progress test stopped it",
}


@dataclass(frozen=True)
class Verdict:
    retry: bool
    to_rung: int
    why: str


def judge(
    ended_by: str, summary: str, rung: int, use: budgets.SliceUse | None, unit: str
) -> Verdict:
    """Retry ``unit`` (failed with ``ended_by`` on ``rung``) on the next rung, or why not."""
    what = ENDINGS.get(ended_by, f"it ended {ended_by}")
    said = f"{what} on rung {rung} ({round_rules.tactic(rung)})" + (
        f": {summary}" if summary else ""
    )
    if rung >= round_rules.LAST_RUNG:
        return Verdict(False, rung, f"{said}; the ladder is spent (rung {rung} is the last)")
    spent = _budget_spent(use, unit)
    if spent is not None:
        return Verdict(False, rung, f"{said}; {spent}")
    return Verdict(True, rung + 1, f"{said}; {_budget_left(use, unit)}")


def _budget_spent(use: budgets.SliceUse | None, unit: str) -> str | None:
    if use is None:
        return None
    for measure in budgets.measures(use):
        if measure.kind == "ceiling" and measure.breached:
            return (
                f"the slice's {measure.budget} budget is spent "
                f"({measure.value:g} > {measure.limit:g}: {measure.detail})"
            )
    limit = use.budgets.rework_rounds
    used = use.units[unit].rework if unit in use.units else 0
    if limit is not None and used >= limit:
        return f"the unit has used {used} of the slice's {limit} rework rounds"
    return None


def _budget_left(use: budgets.SliceUse | None, unit: str) -> str:
    limit = use.budgets.rework_rounds if use is not None else None
    if limit is None:
        return "the slice's budget allows it (no rework limit)"
    used = use.units[unit].rework if use is not None and unit in use.units else 0
    return f"the slice's budget allows it (rework {used} of {limit})"


def decision(world: World, view: SliceView, action: Retry) -> Publishing:
    """The retry decision for ``action.failure``, conditional on the slice subject."""
    unit = view.units[action.unit]
    history = conv.unit_view(world.state(conv.FOLD.name), action.unit)
    rung = history.rung if history is not None else 1
    use = world.state(budgets.FOLD.name).slices.get(view.slice)
    verdict = judge(unit.ended_by, unit.summary, rung, use, action.unit)
    event = RetryDecided(
        id=answer_id(action.failure, "retry-decided"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        slice=view.slice,
        unit=action.unit,
        failure=action.failure,
        ended_by=unit.ended_by,
        retry=verdict.retry,
        from_rung=rung,
        to_rung=verdict.to_rung,
        why=verdict.why,
        cause=action.failure,
    )
    return world.publish_if(event)


def revive(world: World, action: Revive) -> list[Publishing]:
    """Move the unit back to work as its retry decision granted (the transition table's
    ``failed -> working`` by ``retried``); nothing when the unit has moved since."""
    units: UnitsState = world.state("units")
    view = units.units.get(action.unit)
    if view is None:
        return []
    move = claims.retried(view, action.decision)
    if isinstance(move, claims.Refusal):
        return []
    return [world.move(move, answer_id(action.decision, "retried"))]
