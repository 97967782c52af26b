"""The ratchet's edge table, walked edge by edge and non-edge by non-edge, without a server."""

from __future__ import annotations

import itertools

import pytest

from projections import ratchet
from projections.ratchet import EDGES, RatchetState, Refused, Settled
from schemas import Actor, InvalidValue
from schemas.ratchet import GATE_MOVES, GATE_STATES, SCOPES, GateMoveClaim, GateMoved

CATALOGUE_OPS = frozenset({"cat"})
SEATS = {
    "anyone": ("builder", "b1"),
    "project-operator": ("operator", "op"),
    "standards": ("standards", "std"),
    "catalogue-operator": ("operator", "cat"),
    "meta-rule": ("system", "meta"),
}
CLAIM = "01J00000000000000000000000"


def at(scope: str, state: str | None, change_move: str = "draft") -> RatchetState:
    """A ratchet state with gate G in ``state`` (folded from one GateMoved fact)."""
    folded = RatchetState()
    if state is not None:
        moved = GateMoved(
            project="p", actor=Actor(role="system", principal="t"), gate="G", scope=scope,
            move=change_move, source=None, target=state, claim=CLAIM, authority="t",
        )  # fmt: skip
        ratchet.FOLD.apply(folded, moved)
    return folded


@pytest.mark.parametrize(("edge", "row"), list(EDGES.items()), ids=lambda v: str(v))
def test_every_edge_is_taken_by_its_authority_and_refused_to_every_other(edge, row) -> None:
    """Each arrow of the diagram moves the gate for the authority it names, and a claimant
    without that authority is refused with a reason naming the one it needs."""
    scope, source, move = edge
    state = at(scope, source)
    role, principal = SEATS[row.authority]
    verdict = ratchet.settle(state, scope, "G", move, role, principal, CATALOGUE_OPS)
    assert verdict == Settled(source=source, target=row.target, authority=row.authority)
    for other, (orole, oprincipal) in SEATS.items():
        if ratchet.holds(row.authority, orole, oprincipal, CATALOGUE_OPS):
            continue
        refused = ratchet.settle(state, scope, "G", move, orole, oprincipal, CATALOGUE_OPS)
        assert isinstance(refused, Refused), (other, edge)
        assert ratchet.AUTHORITY_TEXT[row.authority] in refused.reason


def test_every_non_edge_is_refused_naming_the_moves_there_are() -> None:
    """Every (scope, state, move) that is no arrow of the diagram is refused whoever asks,
    and the refusal lists the moves that exist from there."""
    refused = 0
    for scope, source, move in itertools.product(SCOPES, (None, *GATE_STATES), GATE_MOVES):
        if (scope, source, move) in EDGES:
            continue
        for role, principal in SEATS.values():
            verdict = ratchet.settle(
                at(scope, source), scope, "G", move, role, principal, CATALOGUE_OPS
            )
            assert isinstance(verdict, Refused)
            assert "Retired" in verdict.reason or "no edge of the ratchet" in verdict.reason
            refused += 1
    assert refused == (len(SCOPES) * (len(GATE_STATES) + 1) * len(GATE_MOVES) - len(EDGES)) * len(
        SEATS
    )


def test_a_loosening_refusal_names_the_measurement_that_would_justify_it() -> None:
    """A builder retiring a Local gate is refused, told the project operator settles it and
    shown the dismissal evidence that would justify the loosening."""
    verdict = ratchet.settle(
        at("local", "Local"), "local", "G", "retire", "builder", "b1", CATALOGUE_OPS,
        "1 of 20 findings dismissed as false positives (5%)",
    )  # fmt: skip
    assert isinstance(verdict, Refused)
    assert "the project operator" in verdict.reason
    assert "1 of 20 findings dismissed as false positives" in verdict.reason


def test_an_edited_profile_is_settled_by_the_catalogue_operator_not_standards() -> None:
    """A profile changed by an edit (which may relax it) is a loosening at catalogue review:
    the standards role cannot settle it, the catalogue operator can; an addition the
    standards role settles."""
    edited = at("profile", "Proposed", change_move="edit-check")
    no = ratchet.settle(edited, "profile", "G", "settle", "standards", "std", CATALOGUE_OPS)
    yes = ratchet.settle(edited, "profile", "G", "settle", "operator", "cat", CATALOGUE_OPS)
    assert isinstance(no, Refused) and "catalogue operator" in no.reason
    assert isinstance(yes, Settled) and yes.target == "Profile"
    added = at("profile", "Proposed", change_move="add-check")
    assert isinstance(
        ratchet.settle(added, "profile", "G", "settle", "standards", "std", CATALOGUE_OPS), Settled
    )
    project_op = ratchet.settle(edited, "profile", "G", "settle", "operator", "op", CATALOGUE_OPS)
    assert isinstance(project_op, Refused)


def test_what_blocks_follows_the_state() -> None:
    """Local and Profile gates block; Drafted, a fresh Proposed, Retired and an advisory
    review do not; a check the ratchet never recorded blocks as configured."""
    assert ratchet.blocks(None)
    for state, blocking in [("Local", True), ("Profile", True), ("Drafted", False),
                            ("Proposed", False), ("Retired", False)]:  # fmt: skip
        assert ratchet.blocks(at("local", state).gates.get("local:G")) is blocking, state


@pytest.mark.parametrize(
    ("move", "every", "problem"),
    [
        ("raise-cadence", None, "names the new N"),
        ("lower-cadence", 0, "names the new N"),
        ("lower-cadence", True, "names the new N"),
        ("keep", 10, "only raise-cadence and lower-cadence name an N"),
    ],
)
def test_a_cadence_claim_names_a_positive_n_and_nothing_else_names_one(
    move: str, every: object, problem: str
) -> None:
    """A cadence move without a positive whole N, or another move with one, is refused
    when the claim is made, naming the field."""
    with pytest.raises(InvalidValue, match=rf"every=.* is not valid: .*{problem}"):
        GateMoveClaim(
            project="p", actor=Actor(role="standards", principal="s"), gate="cli",
            scope="profile", move=move, why="cadence", every=every,
        )  # fmt: skip
