"""The ``contract_landing`` projection: contracts waiting for the merger, and proposals.

Per slice, the contract its accepted plan brings and whether the merger landed it
(:class:`ContractLanded`) or refused it (a system ``refused-transition`` finding whose
``evidence.accepted`` names the acceptance). :func:`held` is the dispatcher's question
(may this slice's units start?) and :func:`to_land` the merger's (what should trunk get
next?). Operators' configuration proposals and approvals are kept whoever made them, so
the merger answers each one (an agent's with a refusal).

A gate the ratchet approved (``gate.moved.v1``, move ``approve``, settled by an operator)
is installed the same way: a contract of one check, the command its draft named, kept
under :data:`GATE_KEY` ``<gate>`` (never a slice id: a slice id cannot hold ``:``) and
landed by the merger like a slice's contract. Only that fact installs: a draft, an
addition or an edit claimed by anyone installs nothing.

Every fact here counts only from the system: the :class:`Fold` guard drops forgeries, so a
forged ``contract.landed`` cannot release a slice, nor a forged approval install a gate.
"""

import msgspec

from projections.base import Fold
from schemas import Event, FindingRaised, FindingResolved
from schemas.authority import REFUSAL_CLASS
from schemas.contract import (
    ConfigApprove,
    ConfigLanded,
    ConfigProposal,
    ContractChanges,
    ContractLanded,
    NewCheck,
)
from schemas.lifecycle import FindingDismissed
from schemas.ratchet import GateMoved
from schemas.slices import SlicePlanAccepted, SlicePlanDiscarded

CONTRACT_EVIDENCE = "contract_accepted"
"""The key of a refusal finding's evidence naming the plan acceptance it refuses."""
GATE_KEY = "gate:"
"""The prefix of an approved gate's installation among the contracts (``gate:<id>``)."""
GATE_SLICE = "gate-"
"""The prefix of the name an installation lands under (its trailer and landing fact)."""
PROPOSAL_EVIDENCE = "config_claim"
"""The key of a refusal finding's evidence naming the proposal or approval it refuses."""


class Pending(msgspec.Struct, kw_only=True):
    """A slice's contract, from its accepted plan, until landed or refused."""

    slice: str
    accepted: str
    changes: ContractChanges
    landed: str | None = None
    """The contract commit, once landed."""
    refused: str | None = None
    """The refusal finding, when the merger would not land it."""
    gate: str | None = None
    """The approved gate this installs (a contract of its one check), not a slice's."""


class Proposal(msgspec.Struct, kw_only=True):
    id: str
    role: str
    principal: str
    text: str
    why: str
    refused: str | None = None
    landed: str | None = None


class Approval(msgspec.Struct, kw_only=True):
    id: str
    role: str
    principal: str
    proposal: str
    why: str
    answered: bool = False


class Refusal(msgspec.Struct, kw_only=True):
    """The merger's refusal of a slice's contract, until a new plan for the slice answers
    it (the dispatcher then resolves it) or it is closed otherwise."""

    slice: str
    accepted: str
    answered_by: str | None = None
    closed: bool = False


class ContractState(msgspec.Struct):
    slices: dict[str, Pending] = {}
    order: list[str] = []
    """Slices in the order their contracts were accepted (the merger lands oldest first)."""
    proposals: dict[str, Proposal] = {}
    approvals: list[Approval] = []
    refusals: dict[str, Refusal] = {}
    """The merger's contract refusal finding -> what it refused and whether it is answered."""
    drafted: dict[str, str] = {}
    """Local gate -> the check command its last draft (or edit) named, until approved."""
    landings: dict[str, str] = {}
    """Landing fact id -> the digest of the configuration adopted with it (the merger gates
    a trunk it moved by a landing only once that adoption is folded too)."""


def initial() -> ContractState:
    return ContractState()


def apply(state: ContractState, event: Event) -> ContractState:
    match event:
        case SlicePlanAccepted():
            contract = event.plan.contract
            name = event.plan.slice
            for refused in state.refusals.values():
                if refused.slice == name and refused.accepted != event.id:
                    refused.answered_by = refused.answered_by or event.id
            if contract is None or contract.empty:
                state.slices.pop(name, None)
                return state
            state.slices[name] = Pending(slice=name, accepted=event.id, changes=contract)
            state.order = [s for s in state.order if s != name] + [name]
        case SlicePlanDiscarded():
            found = state.slices.get(event.slice)
            if found is not None and found.landed is None:
                del state.slices[event.slice]
                state.order = [s for s in state.order if s != event.slice]
        case ContractLanded():
            for found in state.slices.values():
                if found.accepted == event.accepted:
                    found.landed = event.commit
            state.landings[event.id] = event.config
        case GateMoved(scope="local"):
            _gate_moved(state, event)
        case ConfigProposal() if event.id not in state.proposals:
            # The first proposal under an id is the one approved by it: a later claim
            # reusing the id must not swap the text an operator read and approved.
            state.proposals[event.id] = Proposal(
                id=event.id,
                role=event.actor.role,
                principal=event.actor.principal,
                text=event.text,
                why=event.why,
            )
        case ConfigApprove():
            state.approvals.append(
                Approval(
                    id=event.id,
                    role=event.actor.role,
                    principal=event.actor.principal,
                    proposal=event.proposal,
                    why=event.why,
                )
            )
        case ConfigLanded():
            found_proposal = state.proposals.get(event.proposal)
            if found_proposal is not None:
                found_proposal.landed = event.commit
            state.landings[event.id] = event.config
            _answered(state, event.approval)
        case FindingRaised() if _merger_refusal(event):
            _refused(state, event)
        case FindingResolved() | FindingDismissed() if event.finding in state.refusals:
            state.refusals[event.finding].closed = True
        case _:
            pass
    return state


def _gate_moved(state: ContractState, event: GateMoved) -> None:
    """Remember what a drafted gate would run; install it once an operator approved it."""
    check = event.evidence.get("check")
    if event.target == "Drafted" and isinstance(check, str) and check:
        state.drafted[event.gate] = check
        return
    if event.target is None:
        state.drafted.pop(event.gate, None)  # declined: nothing to install
        return
    command = state.drafted.get(event.gate)
    if event.move != "approve" or event.target != "Local" or command is None:
        return
    if not event.authority.startswith("operator:"):
        return  # the ratchet settles an approval by the project operator alone
    del state.drafted[event.gate]
    key = f"{GATE_KEY}{event.gate}"
    if key in state.slices:
        return  # installed once: a later approval of an edit is the ratchet's, not a new check
    changes = ContractChanges(checks=(NewCheck(id=event.gate, command=command),))
    name = f"{GATE_SLICE}{event.gate}"[:64]
    state.slices[key] = Pending(slice=name, accepted=event.id, changes=changes, gate=event.gate)
    state.order.append(key)


def _merger_refusal(event: FindingRaised) -> bool:
    """The merger's refusal of a contract or a configuration claim, and nothing else: the
    system re-raises a reviewer's or an investigator's findings with the agent's own
    criterion and evidence, so evidence keys alone must never hold a slice or cancel an
    operator's proposal (see ``authority.refused_claim``)."""
    return (
        event.actor.role == "system"
        and event.cls == REFUSAL_CLASS
        and event.producer == MERGER_PRODUCER
    )


MERGER_PRODUCER = "trunk_gate"
"""The producer the merger's landing refusals carry (workers/merger/landing.py)."""


def _refused(state: ContractState, event: FindingRaised) -> None:
    accepted = event.evidence.get(CONTRACT_EVIDENCE)
    if isinstance(accepted, str):
        for pending in state.slices.values():
            if pending.accepted == accepted and pending.landed is None:
                pending.refused = event.id
                if pending.gate is None:  # a gate's refusal is the operator's, no plan's
                    state.refusals[event.id] = Refusal(slice=pending.slice, accepted=accepted)
    claim = event.evidence.get(PROPOSAL_EVIDENCE)
    if isinstance(claim, str):
        proposal = state.proposals.get(claim)
        if proposal is not None:
            proposal.refused = event.id
        _answered(state, claim)


def _answered(state: ContractState, approval: str) -> None:
    for entry in state.approvals:
        if entry.id == approval:
            entry.answered = True


FOLD = Fold(name="contract_landing", state_type=ContractState, initial=initial, apply=apply)


# -- queries ----------------------------------------------------------------------------


def held(state: ContractState, slice_id: str) -> bool:
    """True while the slice's accepted plan brings a contract that has not landed (refused
    included: its units would be judged by criteria trunk does not hold)."""
    found = state.slices.get(slice_id)
    return found is not None and found.landed is None


def refused(state: ContractState) -> list[Pending]:
    """Contracts the merger refused, oldest first: the dispatcher discards their plans so
    the planner is asked again with the merger's reasons (never held for the run)."""
    found = (state.slices.get(name) for name in state.order)
    return [
        p
        for p in found
        if p is not None and p.gate is None and p.landed is None and p.refused is not None
    ]


def answered_refusals(state: ContractState) -> list[tuple[str, Refusal]]:
    """Contract refusals a later plan for their slice answers, still open (the dispatcher
    resolves them, so the planner's brief no longer lists them as open)."""
    return [
        (finding, r)
        for finding, r in sorted(state.refusals.items())
        if r.answered_by is not None and not r.closed
    ]


def by_accepted(state: ContractState, accepted: str) -> Pending | None:
    """The contract (or gate installation) answering ``accepted``."""
    return next((p for p in state.slices.values() if p.accepted == accepted), None)


def installs(state: ContractState) -> list[Pending]:
    """Approved gates, installed or waiting to be."""
    return [p for p in state.slices.values() if p.gate is not None]


def to_land(state: ContractState) -> Pending | None:
    """The oldest contract neither landed nor refused."""
    for name in state.order:
        found = state.slices.get(name)
        if found is not None and found.landed is None and found.refused is None:
            return found
    return None


def unanswered_proposals(state: ContractState) -> list[Proposal]:
    """Proposals not refused yet, whose claimant the merger has not judged: a proposal
    from a non-operator is answered with a refusal as soon as it is seen."""
    return [p for p in state.proposals.values() if p.refused is None and p.landed is None]


def unanswered_approvals(state: ContractState) -> list[Approval]:
    return [a for a in state.approvals if not a.answered]
