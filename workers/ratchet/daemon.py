"""The ratchet daemon: every rule-changing claim becomes a fact here, or is refused.

It serves every project (the catalogue's profile reviews count slices across all of
them): folds each project's finding lifecycle and gate ratchet, and folds every accepted
plan and every project's meta-finding on a profile's check into the catalogue project's
state as well, so the catalogue's decision sees every declaring slice and every doubt.
``decide`` composes the pure decisions of :mod:`.lifecycle` (finding
claims), :mod:`.moves` (gate claims, the meta rule, profile reviews) and :mod:`.decisions`
(decision claims, decisions serving no live objective, stale decisions); every answer
carries an id derived from what it answers, so a restart or a second daemon stores it once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Never

from projections import blocking, decisions, lifecycle, ratchet
from projections.intents import Publishing
from schemas import Actor, Event
from schemas.slices import SlicePlanAccepted
from workers.kernel import Daemon, World
from workers.ratchet import decisions as decision_claims
from workers.ratchet import lifecycle as finding_claims
from workers.ratchet import moves
from workers.ratchet.policy import Policy


class Ratchet(Daemon[Never]):
    name = "ratchet"
    folds = (lifecycle.FOLD, ratchet.FOLD, decisions.FOLD, blocking.FOLD)

    def __init__(
        self, policy: Policy, *, projects: Sequence[str] = (), actor: Actor | None = None
    ) -> None:
        super().__init__(projects=projects, actor=actor)
        self.policy = policy

    def also_folds_into(self, event: Event) -> Sequence[str]:
        if isinstance(event, SlicePlanAccepted) and event.plan.capabilities:
            return (self.policy.catalogue,)
        if ratchet.doubt_of(event) is not None and event.project != self.policy.catalogue:
            return (self.policy.catalogue,)  # a project's doubt of a profile: the catalogue's
        return ()

    def decide(self, world: World) -> Sequence[Publishing]:
        return [
            *finding_claims.decide(world),
            *moves.decide_claims(world, self.policy),
            *moves.decide_meta(world, self.policy),
            *moves.decide_reviews(world, self.policy),
            *moves.decide_doubts(world, self.policy),
            *decision_claims.decide(world),
        ]
