"""The ``integrity`` projection: forgeries seen on the log, and which are already reported.

Every other fold skips a forgery (:mod:`schemas.authority`); this one counts them,
so an audit can say how many there were, and keeps each not yet named in a ``forgery``
finding, which the integrity daemon raises once per forged event.
"""

import msgspec

from projections.base import Fold
from schemas import Event, FindingRaised
from schemas.authority import FORGERY_CLASS as FORGERY_CLASS
from schemas.authority import forgery_reason, standing

EVIDENCE_KEY = "forged"
"""The evidence key of a forgery finding that names the forged event's id."""


class Forgery(msgspec.Struct, frozen=True, kw_only=True):
    """One forged event: what it claimed to be and who published it."""

    event: str
    kind: str
    role: str
    principal: str
    reason: str
    unit: str | None = None


class IntegrityState(msgspec.Struct):
    forged: int = 0
    by_kind: dict[str, int] = {}
    unreported: dict[str, Forgery] = {}
    """Forged event id -> the forgery, until a system forgery finding names it."""
    reported: int = 0


def initial() -> IntegrityState:
    return IntegrityState()


def apply(state: IntegrityState, event: Event) -> IntegrityState:
    if standing(event) == "forged":
        state.forged += 1
        state.by_kind[event.kind] = state.by_kind.get(event.kind, 0) + 1
        state.unreported[event.id] = Forgery(
            event=event.id,
            kind=event.kind,
            role=event.actor.role,
            principal=event.actor.principal,
            reason=forgery_reason(event),
            unit=getattr(event, "unit", None),
        )
        return state
    match event:
        case FindingRaised(cls=cls, evidence=evidence) if cls == FORGERY_CLASS:
            # Only reached for the system's own finding: a forged one is skipped above.
            forged = evidence.get(EVIDENCE_KEY)
            if isinstance(forged, str) and state.unreported.pop(forged, None) is not None:
                state.reported += 1
    return state


FOLD = Fold(
    name="integrity",
    state_type=IntegrityState,
    initial=initial,
    apply=apply,
    sees_forgeries=True,
)
