"""Which facts install a gate (the contract_landing fold alone): the ratchet's approval of
a drafted gate, settled by an operator — never a forged approval, an agent's draft, an
addition or an edit, and never twice."""

from __future__ import annotations

from lessonkit import SYSTEM

from projections import contract_landing
from schemas import Actor, Event
from schemas.ids import new_id
from schemas.ratchet import GateMoved, GateMoveName, GateState

P = "shop"
COMMAND = "python -m pytest -q tests/test_total.py"


def moved(
    move: GateMoveName,
    source: GateState | None,
    target: GateState | None,
    *,
    actor: Actor = SYSTEM,
    authority: str = "operator:olive",
    check: str = "",
) -> GateMoved:
    return GateMoved(
        project=P, actor=actor, gate="totals", scope="local", move=move, source=source,
        target=target, claim=new_id(), authority=authority,
        evidence={"check": check} if check else {},
    )  # fmt: skip


def installs(*events: Event) -> list[contract_landing.Pending]:
    return contract_landing.installs(contract_landing.FOLD.fold(events))


def test_only_an_operator_s_approval_of_a_drafted_gate_installs_its_check() -> None:
    draft = moved("draft", None, "Drafted", authority="builder:b1", check=COMMAND)
    assert installs(draft) == []  # a draft installs nothing
    forged = moved("approve", "Drafted", "Local", actor=Actor(role="builder", principal="b1"))
    assert installs(draft, forged) == []  # an agent's "fact" is a forgery no fold reads
    wrong_seat = moved("approve", "Drafted", "Local", authority="builder:b1")
    assert installs(draft, wrong_seat) == []
    approved = moved("approve", "Drafted", "Local")
    [pending] = installs(draft, approved)
    assert pending.gate == "totals" and pending.accepted == approved.id
    assert [(c.id, c.command) for c in pending.changes.checks] == [("totals", COMMAND)]
    assert contract_landing.to_land(contract_landing.FOLD.fold([draft, approved])) == pending


def test_an_edit_approved_again_is_not_a_second_install_and_a_decline_drops_the_draft() -> None:
    draft = moved("draft", None, "Drafted", check=COMMAND)
    approved = moved("approve", "Drafted", "Local")
    edit = moved("edit-check", "Local", "Drafted", authority="builder:b1", check="true")
    again = moved("approve", "Drafted", "Local")
    [only] = installs(draft, approved, edit, again)
    assert only.accepted == approved.id  # an edit of a check goes through the ratchet
    declined = moved("decline", "Drafted", None)
    assert installs(draft, declined, moved("approve", "Drafted", "Local")) == []
    state = contract_landing.FOLD.fold([draft, approved])
    assert contract_landing.refused(state) == []  # never a plan the dispatcher discards
    assert not contract_landing.held(state, "gate-totals")
