"""The ratchet: every gate's state, and the claims and facts that move it.

A gate is one check (a project-local gate) or one capability profile. It is in one of the
states of :data:`GATE_STATES` and moves only along the edges of the ratchet
(``projections.ratchet.EDGES``). Anyone asks with a :class:`GateMoveClaim`; the
ratchet daemon settles it against the edge table and the claimant's authority and answers
with a :class:`GateMoved` fact (carrying the decision that records the settlement) or a
``refused-transition`` finding naming the authority the move needs.

A gate is also a memory of a mistake: an investigation whose report proposes a gate
publishes a :class:`GateProposed` fact, which the ratchet settles as a draft claim of the
system's (so it is refused, like any draft, for a gate that already exists).
"""

from typing import Any, Literal

from schemas.envelope import EventBase
from schemas.errors import InvalidValue
from schemas.ids import EventId, Token

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
    "raise-cadence",  # Profile -> Profile, a larger N: reviewed less often (a loosening)
    "lower-cadence",  # Profile -> Profile, a smaller N: reviewed more often (a tightening)
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
    "raise-cadence",
    "lower-cadence",
)
CADENCE_MOVES: frozenset[GateMoveName] = frozenset({"raise-cadence", "lower-cadence"})
"""The moves that change a profile's review cadence N (``every`` on the claim)."""


class GateMoveClaim(EventBase, frozen=True, kw_only=True, tag="gate.move.v1"):
    """A claim that gate ``gate`` (of ``scope``) should make ``move``.

    ``check`` names the check added or edited (``add-check``, ``edit-check``); ``defect``
    is the class of mistake a drafted gate catches (a gate is a memory of a mistake);
    ``every`` is the new review cadence N a ``raise-cadence`` or ``lower-cadence`` asks for.
    """

    gate: Token
    scope: Scope
    move: GateMoveName
    why: str
    check: str = ""
    defect: str = ""
    every: int | None = None

    def __post_init__(self) -> None:
        if self.move in ("add-check", "edit-check") and not self.check:
            raise InvalidValue("check", self.check, f"{self.move} names the check it changes")
        if self.move in CADENCE_MOVES:
            if isinstance(self.every, bool) or not isinstance(self.every, int) or self.every < 1:
                raise InvalidValue(
                    "every", self.every, f"{self.move} names the new N, a positive whole number"
                )
        elif self.every is not None:
            raise InvalidValue(
                "every", self.every, "only raise-cadence and lower-cadence name an N"
            )
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


class GateProposed(EventBase, frozen=True, kw_only=True, tag="gate.proposed.v1"):
    """The investigator proposes project-local gate ``gate``: ``check`` would have caught
    what investigation ``investigation`` found (its finding ``finding``), a mistake of class
    ``defect``.

    A fact, published atomically with the investigation's finding and completion: only the
    system proposes a gate on an investigation's behalf (an agent's own proposal is a
    :class:`GateMoveClaim`, and the same kind from an agent is a forgery every fold skips).
    The ratchet settles it as the draft claim :func:`as_draft` makes of it: Drafted, owned
    by the project operator, who approves or declines it."""

    gate: Token
    check: str
    defect: str
    investigation: EventId
    finding: EventId
    why: str

    def subject_suffix(self) -> str:
        return f"ratchet.proposed.{self.gate}"


def as_draft(proposed: GateProposed) -> GateMoveClaim:
    """The draft claim a proposal stands for (same id, so the answer names the proposal)."""
    return GateMoveClaim(
        id=proposed.id,
        at=proposed.at,
        project=proposed.project,
        actor=proposed.actor,
        gate=proposed.gate,
        scope="local",
        move="draft",
        why=proposed.why,
        check=proposed.check,
        defect=proposed.defect,
    )
