"""The planner daemon's effects: what its decision asks its shell to do.

* :class:`PlanSlice` asks the planner command for one slice's plan (one try); keyed by the
  run's basis, the slice and the attempt, so a try runs once.
* :class:`Reconnoitre` runs the reconnaissance command; keyed by the run and the findings it
  answers (not the round: a plan discarded meanwhile asks for the same reconnaissance).
"""

from __future__ import annotations

from typing import TypeAlias

from projections.intents import Effect, IntentOf
from schemas.charter import Autonomy
from schemas.planning import PlanBrief, ReconBrief

PLAN = "plan"
"""The key prefix of :class:`PlanSlice`."""
RECON = "recon"
"""The key prefix of :class:`Reconnoitre`."""


class PlanSlice(Effect, frozen=True, tag="planner.plan_slice.v1"):
    """Ask for the plan of ``brief.slice`` (try ``brief.attempt``) of the run ``basis``,
    under charter ``charter`` at ``autonomy``."""

    brief: PlanBrief
    basis: str
    charter: str
    autonomy: Autonomy

    @property
    def key(self) -> str:
        return f"{PLAN}:{self.basis}:{self.brief.slice}:{self.brief.attempt}"


class Reconnoitre(Effect, frozen=True, tag="planner.reconnoitre.v1"):
    """Run reconnaissance for the run ``basis`` under charter ``charter``."""

    brief: ReconBrief
    basis: str
    charter: str

    @property
    def answers(self) -> list[str]:
        """The findings the reconnaissance answers (the facts they say are false)."""
        return sorted(f.id for f in self.brief.invalidated)

    @property
    def key(self) -> str:
        return f"{RECON}:{self.basis}:{','.join(self.answers)}"


PlannerEffect = PlanSlice | Reconnoitre
"""Every effect the planner asks for."""

PlannerIntent: TypeAlias = IntentOf[PlannerEffect]
"""What the planner may ask for (``decide``, ``perform``): publishing, and its own effects."""
