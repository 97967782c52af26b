"""Landing a slice's contract, or an operator's approved configuration proposal, on trunk.

The merger is trunk's only writer, so both land through it, as one system commit on top
of a trunk gated green under the adopted configuration (and, for a contract, only once
trunk has been green at all):

* a **contract** (:mod:`schemas.contract`): each criterion's test written into its
  file, its node id added to a ``pending`` list (one entry per line), each check added;
  trailer ``Loopbus-Contract: <slice>``;
* an approved **proposal**: the proposed ``loopbus.toml``; trailer ``Loopbus-Proposal``.

Each is judged by the ratchet's rules first (:mod:`.contract`): adding is free, anything
that edits or loosens is refused with a finding naming why. Landed, the new file is
ADOPTED in the same atomic batch as the fact that records the landing
(``contract.landed.v1`` / ``config.landed.v1``), so trunk is judged by it and the commit
is never taken for tampering.

This module is the decision side, pure (:func:`claim_answer`, :func:`next_landing`,
:func:`recorded_landing`, and :func:`refusal`, the finding that refuses); the git work
and the facts recording a landing are :mod:`.landing_commit`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from projections import contract_landing as fold
from projections.contract_landing import (
    CONTRACT_EVIDENCE,
    PROPOSAL_EVIDENCE,
    Approval,
    ContractState,
)
from projections.intents import Publish, Publishing
from projections.merges import MergesState
from schemas import Actor, FindingRaised
from schemas.authority import REFUSAL_CLASS
from schemas.contract import (
    CONTRACT_TRAILER,
    PROPOSAL_TRAILER,
)
from schemas.ids import answer_id
from schemas.targets import PlanTarget, RecordTarget
from workers.kernel import World
from workers.merger.effects import (
    LandContract,
    LandProposal,
    RecordContract,
    RecordProposal,
)
from workers.merger.seen import CAUSE, TrunkSeen

CONFIG_ROLES = frozenset({"operator"})
"""Who may propose or approve a configuration change: an operator, never an agent."""

# -- the decision (pure) ----------------------------------------------------------------


def state_of(world: World) -> ContractState:
    """The folded contracts and proposals (empty for a world built without that fold)."""
    found: ContractState | None = world.states.get(fold.FOLD.name)
    return found if found is not None else fold.initial()


def adoption_pending(state: ContractState, merges: MergesState) -> bool:
    """Trunk was moved by a landing whose adoption is not folded yet (they are one batch,
    but folded one at a time): gating it now would judge it by the old configuration."""
    moved_by = merges.trunk.moved_by
    wanted = state.landings.get(moved_by) if moved_by is not None else None
    adopted = merges.adopted
    return wanted is not None and (adopted is None or adopted.digest != wanted)


def claim_answer(world: World, state: ContractState) -> Publishing | None:
    """Refuse, at once, a proposal or approval that no repository could make good: one
    from a role other than operator, an approval of an unknown, refused or landed
    proposal."""
    for proposal in fold.unanswered_proposals(state):
        if proposal.role not in CONFIG_ROLES:
            return Publish(
                refusal(
                    world.project,
                    world.actor,
                    proposal.id,
                    "proposer-role",
                    f"only an operator proposes a configuration change, not role "
                    f"{proposal.role!r} ({proposal.principal}); an agent changes the contract "
                    "only through a plan's [contract]",
                    at=world.now,
                )
            )
    for approval in fold.unanswered_approvals(state):
        problem = approval_problem(state, approval)
        if problem is not None:
            return Publish(refusal(world.project, world.actor, approval.id, *problem, at=world.now))
    return None


def approval_problem(state: ContractState, approval: Approval) -> tuple[str, str] | None:
    if approval.role not in CONFIG_ROLES:
        return (
            "approver-role",
            f"only an operator approves a configuration change, not role {approval.role!r} "
            f"({approval.principal})",
        )
    proposal = state.proposals.get(approval.proposal)
    if proposal is None:
        return (
            "unknown-proposal",
            f"no configuration proposal {approval.proposal!r} is on the log; "
            "loopbus tail --kind config.proposal lists them",
        )
    if proposal.refused is not None or proposal.role not in CONFIG_ROLES:
        return (
            "proposal-refused",
            f"proposal {proposal.id} was refused ({proposal.refused or 'not an operator'})",
        )
    if proposal.landed is not None:
        return ("already-landed", f"proposal {proposal.id} landed already as {proposal.landed}")
    return None


def next_landing(
    world: World, state: ContractState, merges: MergesState, trunk: str
) -> LandContract | LandProposal | None:
    """On a trunk gated green now, what to land next: the oldest approved proposal, else
    the oldest contract. A contract needs a trunk that has been green at least once (it
    is: this is asked only on a green trunk)."""
    adopted = merges.adopted
    if adopted is None:
        return None
    for approval in fold.unanswered_approvals(state):
        proposal = state.proposals.get(approval.proposal)
        if proposal is None or approval_problem(state, approval) is not None:
            continue  # refused first, by claim_answer
        return LandProposal(
            project=world.project,
            approval=approval,
            proposal=proposal,
            trunk=trunk,
            adopted=adopted,
        )
    pending = fold.to_land(state)
    if pending is None:
        return None
    return LandContract(project=world.project, pending=pending, trunk=trunk, adopted=adopted)


def recorded_landing(
    world: World, state: ContractState, merges: MergesState, seen: TrunkSeen
) -> RecordContract | RecordProposal | None:
    """Trunk sits on a landing commit the merger wrote but did not record (it stopped in
    between): record it now (same facts, same ids)."""
    marks, adopted = seen.trailers, merges.adopted
    if adopted is None or merges.trunk.commit is None:
        return None
    slice_id, cause = marks.get(CONTRACT_TRAILER), marks.get(CAUSE)
    if slice_id is not None:
        pending = fold.by_accepted(state, cause) if cause is not None else None
        if pending is not None and pending.landed is None and pending.slice == slice_id:
            return RecordContract(
                project=world.project,
                pending=pending,
                commit=seen.commit,
                previous=merges.trunk.commit,
            )
    proposal_id = marks.get(PROPOSAL_TRAILER)
    if proposal_id is not None:
        for approval in fold.unanswered_approvals(state):
            if approval.id == cause and approval.proposal == proposal_id:
                return RecordProposal(
                    project=world.project,
                    approval=approval,
                    commit=seen.commit,
                    previous=merges.trunk.commit,
                )
    return None


def refusal(
    project: str,
    actor: Actor,
    claim: str,
    code: str,
    message: str,
    *,
    slice_id: str | None = None,
    accepted: str | None = None,
    evidence: dict[str, Any] | None = None,
    at: datetime | None = None,
) -> FindingRaised:
    """A refused contract (``accepted`` given: owner planner) or configuration claim."""
    facts: dict[str, Any] = dict(evidence or {})
    if accepted is not None:
        facts[CONTRACT_EVIDENCE] = accepted
    else:
        facts[PROPOSAL_EVIDENCE] = claim
    finding = FindingRaised(
        id=answer_id(claim, "config-refused"),
        project=project,
        actor=actor,
        producer="trunk_gate",
        target=PlanTarget(slice=slice_id) if slice_id else RecordTarget(id=claim),
        severity="high" if code.endswith("-role") else "medium",
        criterion=code,
        cls=REFUSAL_CLASS,
        message=(
            f"contract of slice {slice_id} refused: {message}"
            if slice_id
            else f"configuration change refused: {message}"
        ),
        evidence=facts,
        slice=slice_id,
        owner="planner" if slice_id else "operator",
    )
    return finding if at is None else msgspec.structs.replace(finding, at=at)
