"""The integrity daemon: one finding for every forged event on the log, naming the forger.

A forgery (a fact kind published by anyone but the system, or a finding beyond what its
role may claim) is applied by no fold; this daemon makes it visible. The finding's id is
derived from the forged event, so a restart, or two integrity daemons, raise it once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Never

from projections import integrity
from projections.integrity import EVIDENCE_KEY, Forgery
from projections.intents import Publish, Publishing
from schemas import Actor, FindingRaised
from schemas.ids import answer_id
from schemas.targets import RecordTarget
from workers.kernel import Daemon, World

SALT = "forgery"


def forgery_finding(project: str, forgery: Forgery, actor: Actor) -> FindingRaised:
    """The finding that names one forger: for the operator, about the forged event."""
    return FindingRaised(
        id=answer_id(forgery.event, SALT),
        project=project,
        actor=actor,
        producer="standards",
        target=RecordTarget(id=forgery.event),
        severity="high",
        criterion=f"forgery:{forgery.kind}",
        cls="forgery",
        message=f"forgery refused: {forgery.reason}; the event was applied by nothing",
        evidence={
            EVIDENCE_KEY: forgery.event,
            "kind": forgery.kind,
            "forger": f"{forgery.role}:{forgery.principal}",
        },
        unit=forgery.unit,
        owner="operator",
    )


class Integrity(Daemon[Never]):
    """Report each forgery once."""

    name = "integrity"
    folds = (integrity.FOLD,)

    def decide(self, world: World) -> Sequence[Publishing]:
        state: integrity.IntegrityState = world.state("integrity")
        return [
            Publish(forgery_finding(world.project, forgery, world.actor))
            for forgery in state.unreported.values()
        ]
