"""The standards daemon: watches the machinery budget of every slice and raises breaches.

It folds the ``budgets`` projection and, once caught up, raises one ``budget-breach``
finding (producer ``standards``, owner ``standards``) for each (slice, budget) crossed and
not raised yet. The finding never belongs to the unit that happened to trip the budget:
when a gate suite outgrows its budget, the gate configuration is what is wrong.

Once is derived from the log: the projection records every standards breach finding, so a
restarted daemon raises nothing twice; and each finding is appended with the expected last
sequence of ``finding.standards``, so two daemons from the same view cannot both raise it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Never

from projections import budgets
from projections.budgets import Breach
from projections.intents import Publishing
from schemas import Actor, FindingRaised
from schemas.targets import BudgetTarget
from workers.kernel import Daemon, World

_UNITS = {
    "gate_wall_clock": "s",
    "wait": "s",
    "tokens_per_unit": " tokens",
    "rework_rounds": " rounds",
    "cache_hit_rate": "",
}


def breach_finding(project: str, breach: Breach, actor: Actor) -> FindingRaised:
    """The finding for one breach: about the budget, owned by the standards role."""
    unit = _UNITS.get(breach.budget, "")
    floor = breach.budget == "cache_hit_rate"
    relation = "below its floor" if floor else "over its ceiling"
    return FindingRaised(
        project=project,
        actor=actor,
        producer="standards",
        target=BudgetTarget(budget=breach.budget),
        severity="medium",
        criterion=f"{breach.slice}:{breach.budget}",
        cls="budget-breach",
        message=(
            f"slice {breach.slice}: {breach.budget} {breach.value:.4g}{unit} is {relation} "
            f"{breach.limit:.4g}{unit} ({breach.detail}); the machinery is what is wrong, "
            "not the unit that tripped it"
        ),
        evidence={
            "slice": breach.slice,
            "budget": breach.budget,
            "value": breach.value,
            "limit": breach.limit,
            "detail": breach.detail,
        },
        slice=breach.slice,
        owner="standards",
    )


class Standards(Daemon[Never]):
    """Raise the first breach not raised yet; the next one once that one is folded."""

    name = "standards"
    folds = (budgets.FOLD,)

    def decide(self, world: World) -> Sequence[Publishing]:
        # One at a time: every finding is conditional on the same subject, so a second one
        # decided from the same view would only lose the race to the first.
        for breach in budgets.breaches(world.state("budgets")):
            return [world.publish_if(breach_finding(world.project, breach, world.actor))]
        return []
