"""The ``ratchet`` projection: every gate's state, as a pure fold of the gate facts.

The ratchet's edges (:data:`EDGES`) are the spec's diagram, one row per arrow: from which
state, by which move, to which state, and which authority settles it. :func:`settle`
judges a claim against the table and the claimant; the ratchet daemon publishes what it
says (a :class:`GateMoved` or a refusal). The fold applies only the facts, so "what state
is gate G in" — and so "which gates block this commit" (:func:`blocking`) — is the same
answer live, in a replay up to any point, and in a test.

The fold also counts, per capability, the slices whose accepted plan declared it (across
projects when the daemon folds every project's plans into the catalogue's state) and the
count at the profile's last review, for the every-N-slices review; and, per profile, the
projects whose meta rule raised a meta-finding on one of its checks since its last review
(:func:`doubt_of`: the daemon folds those findings into the catalogue's state too), for
the catalogue-level meta-finding of a profile dismissed across projects.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import msgspec

from projections.base import Fold
from schemas import Event, FindingRaised
from schemas.authority import refused_claim
from schemas.ratchet import (
    CADENCE_MOVES,
    GateMoveClaim,
    GateMoved,
    GateMoveName,
    GateProposed,
    GateState,
    Scope,
    as_draft,
)
from schemas.slices import SlicePlanAccepted
from schemas.targets import CheckTarget

Authority = Literal["anyone", "project-operator", "standards", "catalogue-operator", "meta-rule"]
AUTHORITY_TEXT: dict[Authority, str] = {
    "anyone": "any role",
    "project-operator": "the project operator (role operator)",
    "standards": "the standards role",
    "catalogue-operator": "the catalogue operator (an operator principal listed in the "
    "ratchet daemon's --catalogue-operator)",
    "meta-rule": "the meta rule (the system, on a meta-finding or a profile's review count)",
}
LOOSENING: frozenset[GateMoveName] = frozenset(
    {"decline", "keep", "retune", "drop", "retire", "raise-cadence"}
)
"""Moves that let through what the gate refused (or keep a gate under doubt in force):
a refusal of one names the dismissal evidence that would justify it."""


@dataclass(frozen=True)
class Edge:
    target: GateState | None
    authority: Authority
    why: str


EDGES: dict[tuple[Scope, GateState | None, GateMoveName], Edge] = {
    ("local", None, "draft"): Edge("Drafted", "anyone", "project-local gate drafted"),
    ("local", "Drafted", "decline"): Edge(None, "project-operator", "operator declines"),
    ("local", "Drafted", "approve"): Edge("Local", "project-operator", "operator approves"),
    ("local", "Local", "add-check"): Edge("Local", "anyone", "adding a check is free"),
    ("local", "Local", "edit-check"): Edge("Drafted", "anyone", "an edit is re-approved"),
    ("local", "Local", "promote"): Edge("Proposed", "standards", "put up for promotion"),
    ("local", "Local", "review"): Edge("LocalUnderReview", "meta-rule", "dismissal rate high"),
    ("local", "LocalUnderReview", "keep"): Edge("Local", "project-operator", "kept"),
    ("local", "LocalUnderReview", "retune"): Edge("Drafted", "project-operator", "retuned"),
    ("local", "LocalUnderReview", "drop"): Edge("Retired", "project-operator", "dropped"),
    ("local", "Local", "retire"): Edge("Retired", "project-operator", "loosened or removed"),
    ("profile", None, "draft"): Edge("Proposed", "anyone", "a profile is drafted"),
    ("profile", "Proposed", "settle"): Edge("Profile", "standards", "catalogue review"),
    ("profile", "Profile", "add-check"): Edge("Proposed", "anyone", "every change, an addition"),
    ("profile", "Profile", "edit-check"): Edge("Proposed", "anyone", "every change, an edit"),
    ("profile", "Profile", "review"): Edge("ProfileUnderReview", "meta-rule", "due for review"),
    ("local", "LocalUnderReview", "review"): Edge(
        "LocalUnderReview", "meta-rule", "the advisory tier reached while under review"
    ),
    ("profile", "ProfileUnderReview", "review"): Edge(
        "ProfileUnderReview", "meta-rule", "the advisory tier reached while under review"
    ),
    ("profile", "ProfileUnderReview", "keep"): Edge("Profile", "catalogue-operator", "kept"),
    ("profile", "ProfileUnderReview", "retune"): Edge("Proposed", "catalogue-operator", "retuned"),
    ("profile", "ProfileUnderReview", "drop"): Edge("Retired", "catalogue-operator", "dropped"),
    ("profile", "Profile", "retire"): Edge("Retired", "catalogue-operator", "loosened or removed"),
    ("profile", "Profile", "raise-cadence"): Edge(
        "Profile", "catalogue-operator", "a larger N reviews it less often: a loosening"
    ),
    ("profile", "Profile", "lower-cadence"): Edge(
        "Profile", "standards", "a smaller N reviews it more often: a tightening"
    ),
}
"""Every arrow of the ratchet diagram; anything else is refused. The two review self-loops
are the meta rule's alone: a gate already under review whose dismissal rate reaches the
advisory tier stays under review and stops blocking until settled."""

IN_FORCE_STATES: frozenset[GateState] = frozenset({"Local", "Profile"})
"""States whose gate blocks. Drafted, Proposed (of a gate never in force), both review
states and Retired run and report without blocking — except a gate that was in force and
is only being changed (Proposed after Profile or Local) or reviewed below the meta rule's
advisory tier, which keeps blocking until settled."""


class GateView(msgspec.Struct, kw_only=True):
    gate: str
    scope: Scope
    state: GateState
    in_force: bool = False
    """The gate blocked before its current move and still does (a change under review)."""
    advisory: bool = False
    change: Literal["tightening", "loosening"] = "tightening"
    """What the pending Proposed change is, which decides who settles it."""
    defect: str = ""
    owner: str = ""
    """Who settles the gate's next move while it is drafted (``operator`` for a local
    draft: the project operator approves or declines it)."""
    checks: list[str] = []
    reviewed_at: int = 0
    review_every: int = 0
    """The profile's review cadence N as the log last set it (0: its shipped N)."""
    moved_at: datetime | None = None
    moves: int = 0


class ProfileDoubt(msgspec.Struct, kw_only=True):
    """The projects whose meta rule raised a meta-finding on one of a profile's checks
    since the profile's last review (each once, in log order), and those findings."""

    projects: list[str] = []
    findings: list[str] = []


class RatchetState(msgspec.Struct):
    gates: dict[str, GateView] = {}
    """``<scope>:<gate>`` -> its view; a declined gate is dropped."""
    pending: dict[str, GateMoveClaim] = {}
    declared: dict[str, int] = {}
    """Capability -> slices whose accepted plan declared it (every project folded here)."""
    declaring: dict[str, list[str]] = {}
    """Capability -> the acceptance (event id) of each declaring slice, in log order."""
    doubts: dict[str, ProfileDoubt] = {}
    """Profile -> the projects doubting its checks since its last review."""


def key(scope: str, gate: str) -> str:
    return f"{scope}:{gate}"


def apply(state: RatchetState, event: Event) -> RatchetState:
    match event:
        case GateMoveClaim():
            state.pending[event.id] = event
        case GateProposed():  # an investigation's gate: the system's own draft claim
            state.pending[event.id] = as_draft(event)
        case GateMoved():
            state.pending.pop(event.claim, None)
            _moved(state, event)
        case FindingRaised(actor=actor) if actor.role == "system":
            claim = refused_claim(event)
            if claim is not None:
                state.pending.pop(claim, None)
            profile = doubt_of(event)
            if profile is not None:
                doubt = state.doubts.setdefault(profile, ProfileDoubt())
                if event.project not in doubt.projects:
                    doubt.projects.append(event.project)
                    doubt.findings.append(event.id)
        case SlicePlanAccepted(plan=plan):
            for capability in dict.fromkeys(plan.capabilities):
                accepted = state.declaring.setdefault(capability, [])
                if event.id not in accepted:
                    accepted.append(event.id)
                    state.declared[capability] = len(accepted)
    return state


def _moved(state: RatchetState, event: GateMoved) -> None:
    old_key = key(event.scope, event.gate)
    view = state.gates.pop(old_key, None)
    if event.target is None:
        return
    scope: Scope = "profile" if event.move == "promote" else event.scope
    if view is None:  # first move: from nothing, or from the implicit configured state
        start = event.source or event.target
        view = GateView(gate=event.gate, scope=scope, state=start)
        view.in_force = start in IN_FORCE_STATES
    was_blocking = view.state in IN_FORCE_STATES and not view.advisory
    view.scope = scope
    view.state = event.target
    view.advisory = event.advisory
    view.moved_at = event.at
    view.moves += 1
    if event.target in IN_FORCE_STATES:
        view.in_force = True
    elif event.target == "Retired" or (event.target == "Drafted" and event.move != "edit-check"):
        view.in_force = False
    elif event.move in ("add-check", "edit-check", "promote", "review"):
        # A claimed edit re-opens approval but cannot switch a gate off: anyone may claim
        # one, so the gate as it stands keeps blocking until the operator settles it.
        view.in_force = was_blocking or view.in_force
    if event.target == "Proposed":
        view.change = "loosening" if event.move in ("edit-check", "retune") else "tightening"
    every = event.evidence.get("every")
    if event.move in CADENCE_MOVES and isinstance(every, int) and every >= 1:
        view.review_every = every
    if event.move == "review":
        view.reviewed_at = int(event.evidence.get("declared", view.reviewed_at))
        if scope == "profile":  # the review considers every doubt raised before it
            state.doubts.pop(event.gate, None)
    defect = event.evidence.get("defect")
    if isinstance(defect, str) and defect:
        view.defect = defect
    owner = event.evidence.get("owner")
    view.owner = owner if isinstance(owner, str) else ""
    check = event.evidence.get("check")
    if isinstance(check, str) and check and check not in view.checks:
        view.checks.append(check)
    state.gates[key(scope, event.gate)] = view


def doubt_of(event: Event) -> str | None:
    """The profile a project's meta-finding doubts: the system's meta rule, on one of the
    profile's checks (``evidence.profile``). A standards role's own ``meta`` claim (producer
    ``standards``) or a catalogue-level finding (target ``profile:``) is none."""
    if not isinstance(event, FindingRaised) or event.actor.role != "system":
        return None
    if event.producer != "meta_rule" or event.cls != "meta":
        return None
    if not isinstance(event.target, CheckTarget):
        return None
    profile = event.evidence.get("profile")
    return profile if isinstance(profile, str) and profile else None


FOLD = Fold(name="ratchet", state_type=RatchetState, initial=RatchetState, apply=apply)


# -- the judgement ----------------------------------------------------------------------


class Settled(msgspec.Struct, frozen=True, kw_only=True):
    source: GateState | None
    target: GateState | None
    authority: Authority


class Refused(msgspec.Struct, frozen=True, kw_only=True):
    reason: str
    authority: Authority | None = None


def current(state: RatchetState, scope: Scope, gate: str) -> GateState | None:
    view = state.gates.get(key(scope, gate))
    return view.state if view is not None else None


def authority_of(
    scope: Scope, source: GateState | None, move: GateMoveName, view: GateView | None
) -> Authority | None:
    edge = EDGES.get((scope, source, move))
    if edge is None:
        return None
    if move == "settle" and view is not None and view.change == "loosening":
        return "catalogue-operator"  # an edited or retuned profile may relax: an operator's
    return edge.authority


def holds(
    authority: Authority, role: str, principal: str, catalogue_operators: frozenset[str]
) -> bool:
    """Whether ``role:principal`` is the authority the edge names."""
    match authority:
        case "anyone":
            return True
        case "project-operator":
            return role == "operator"
        case "standards":
            return role == "standards"
        case "catalogue-operator":
            return role == "operator" and principal in catalogue_operators
        case "meta-rule":
            return role == "system"
    return False  # pragma: no cover


def settle(
    state: RatchetState,
    claim_scope: Scope,
    gate: str,
    move: GateMoveName,
    role: str,
    principal: str,
    catalogue_operators: frozenset[str],
    measurement: str = "",
    implicit: GateState | None = None,
) -> Settled | Refused:
    """Judge one move: an edge of the diagram claimed by the authority it names, or a
    refusal that names the edges there are (for a non-edge) or the authority needed.

    ``implicit`` is the state of a gate the log has no move of yet: a check configured in
    ``loopbus.toml`` is ``Local``, a shipped profile ``Profile``."""
    view = state.gates.get(key(claim_scope, gate))
    source = view.state if view is not None else implicit
    if source == "Retired":
        return Refused(reason=f"gate {gate!r} is Retired: a retired gate never moves again")
    authority = authority_of(claim_scope, source, move, view)
    if authority is None:
        here = source or "no state (not a gate yet)"
        moves = [
            f"{m} ({AUTHORITY_TEXT[authority_of(s, src, m, view) or e.authority]})"
            for (s, src, m), e in EDGES.items()
            if s == claim_scope and src == source
        ]
        return Refused(
            reason=f"{move} is no edge of the ratchet from {here} for a {claim_scope} gate; "
            f"the moves from there: {', '.join(moves) or 'none'}"
        )
    if not holds(authority, role, principal, catalogue_operators):
        why = (
            f"{move} of {claim_scope} gate {gate!r} ({source or 'new'} -> "
            f"{EDGES[(claim_scope, source, move)].target or 'gone'}) is settled by "
            f"{AUTHORITY_TEXT[authority]}, not {role} {principal!r}"
        )
        if move in LOOSENING and measurement:
            why += f"; the measurement that would justify it: {measurement}"
        return Refused(reason=why, authority=authority)
    return Settled(
        source=source, target=EDGES[(claim_scope, source, move)].target, authority=authority
    )


# -- queries ----------------------------------------------------------------------------


def gate_for_check(state: RatchetState, check: str, origin: str = "project") -> GateView | None:
    """The gate a configured check answers to: its profile's for a profile check
    (``profile:<name>@<version>``), else the local gate of that id."""
    if origin.startswith("profile:"):
        name = origin.removeprefix("profile:").partition("@")[0]
        return state.gates.get(key("profile", name))
    return state.gates.get(key("local", check)) or _proposed_from(state, check)


def _proposed_from(state: RatchetState, check: str) -> GateView | None:
    view = state.gates.get(key("profile", check))
    return view if view is not None and view.in_force else None


def blocks(view: GateView | None) -> bool:
    """Whether a check answering to ``view`` blocks: a check the ratchet has no record of
    is a configured gate as before (it blocks); otherwise only a gate in force does."""
    if view is None:
        return True
    if view.advisory:
        return False
    return view.state in IN_FORCE_STATES or view.in_force


def advisory_checks(state: RatchetState, origins: dict[str, str]) -> list[str]:
    """The configured checks (id -> origin) that run and report but do not block."""
    return sorted(c for c, o in origins.items() if not blocks(gate_for_check(state, c, o)))


def cadence(state: RatchetState, profile: str, shipped: int) -> int:
    """The profile's review cadence N: the last the log set, else its ``shipped`` one."""
    view = state.gates.get(key("profile", profile))
    return view.review_every if view is not None and view.review_every else shipped


def due_for_review(state: RatchetState, capability: str, every: int) -> bool:
    """The profile's declaring slices since its last review reached its N."""
    view = state.gates.get(key("profile", capability))
    reviewed = view.reviewed_at if view is not None else 0
    return state.declared.get(capability, 0) - reviewed >= every


class Advisory(msgspec.Struct, frozen=True, kw_only=True):
    """The gates that do not block now: local gates by check id, profiles by name."""

    local: frozenset[str] = frozenset()
    profiles: frozenset[str] = frozenset()

    def checks(self, specs: Iterable[Any]) -> set[str]:
        """The ids of the configured checks (anything with ``id`` and ``origin``) that
        answer to a gate that does not block."""
        quiet = set()
        for spec in specs:
            origin = str(spec.origin)
            if origin.startswith("profile:"):
                if origin.removeprefix("profile:").partition("@")[0] in self.profiles:
                    quiet.add(spec.id)
            elif spec.id in self.local:
                quiet.add(spec.id)
        return quiet


def advisory(state: RatchetState) -> Advisory:
    """What the gate runner reads from the log before a suite: which gates only report."""
    local = {v.gate for v in state.gates.values() if v.scope == "local" and not blocks(v)}
    profiles = {v.gate for v in state.gates.values() if v.scope == "profile" and not blocks(v)}
    return Advisory(local=frozenset(local), profiles=frozenset(profiles))
