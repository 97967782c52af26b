"""The ratchet: every gate's state, and the claims and facts that move it.

A gate is one check (a project-local gate) or one capability profile. It is in one of the
states of :data:`GATE_STATES` and moves only along the edges of the ratchet
(``loopbus.projections.ratchet.EDGES``). Anyone asks with a :class:`GateMoveClaim`; the
ratchet daemon settles it against the edge table and the claimant's authority and answers
with a :class:`GateMoved` fact (carrying the decision that records the settlement) or a
``refused-transition`` finding naming the authority the move needs.
"""

from __future__ import annotations

from typing import Any, Literal

from loopbus.schemas.envelope import EventBase
from loopbus.schemas.errors import InvalidValue
from loopbus.schemas.ids import EventId, Token

GateState = Literal[
    "Drafted",
    "Local",
    "Proposed",
    "Profile",
    "LocalUnderReview",
    "ProfileUnderReview",
    "Retired",
]
GATE_STATES: tuple[GateState, ...] = (
    "Drafted",
    "Local",
    "Proposed",
    "Profile",
    "LocalUnderReview",
    "ProfileUnderReview",
    "Retired",
)

CATALOGUE = "catalogue"
"""The default project profile moves and reviews live on (the catalogue's own log)."""

Scope = Literal["local", "profile"]
SCOPES: tuple[Scope, ...] = ("local", "profile")

GateMoveName = Literal[
    "draft",  # [*] -> Drafted (local) or [*] -> Proposed (profile)
    "decline",  # Drafted -> [*]
    "approve",  # Drafted -> Local
    "add-check",  # Local -> Local; Profile -> Proposed
    "edit-check",  # Local -> Drafted; Profile -> Proposed
    "promote",  # Local -> Proposed
    "settle",  # Proposed -> Profile
    "review",  # Local -> LocalUnderReview; Profile -> ProfileUnderReview (the meta rule)
    "keep",  # *UnderReview -> Local / Profile
    "retune",  # LocalUnderReview -> Drafted; ProfileUnderReview -> Proposed
    "drop",  # *UnderReview -> Retired
    "retire",  # Local / Profile -> Retired
]
GATE_MOVES: tuple[GateMoveName, ...] = (
    "draft",
    "decline",
    "approve",
    "add-check",
    "edit-check",
    "promote",
    "settle",
    "review",
    "keep",
    "retune",
    "drop",
    "retire",
)


class GateMoveClaim(EventBase, frozen=True, kw_only=True, tag="gate.move.v1"):
    """A claim that gate ``gate`` (of ``scope``) should make ``move``.

    ``check`` names the check added or edited (``add-check``, ``edit-check``); ``defect``
    is the class of mistake a drafted gate catches (a gate is a memory of a mistake).
    """

    gate: Token
    scope: Scope
    move: GateMoveName
    why: str
    check: str = ""
    defect: str = ""

    def __post_init__(self) -> None:
        if self.move in ("add-check", "edit-check") and not self.check:
            raise InvalidValue("check", self.check, f"{self.move} names the check it changes")
        if not self.why.strip():
            raise InvalidValue("why", self.why, "say why, in a sentence")

    def subject_suffix(self) -> str:
        return f"gate.move.{self.gate}"


class GateMoved(EventBase, frozen=True, kw_only=True, tag="gate.moved.v1"):
    """The system moved gate ``gate`` from ``source`` to ``target`` (``None``: not a gate:
    before it was drafted, or after it was declined).

    ``claim`` is the claim (or the meta-finding) it answers, ``authority`` the
    ``role:principal`` that settled it, ``decision`` the decision record of the
    settlement. ``advisory`` says that the gate, though in force, reports without
    blocking (a gate put under review at the meta rule's top tier).
    """

    gate: Token
    scope: Scope
    move: GateMoveName
    source: GateState | None
    target: GateState | None
    claim: EventId
    authority: str
    decision: EventId | None = None
    advisory: bool = False
    evidence: dict[str, Any] = {}

    def subject_suffix(self) -> str:
        return f"ratchet.{self.gate}"
