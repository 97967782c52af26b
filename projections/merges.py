"""The ``merges`` projection: approvals to answer, the merge queue, trunk, and trunk-red history
(the trunk side's steps and queries are :mod:`projections.merge_trunk`).

Everything the merger daemon needs to act, and to resume after a restart, is here:

* ``approvals``: approval claims and accepted approve verdicts not answered yet (an answer
  is a :class:`MergeQueued` whose ``cause`` is the approval, or a refusal finding whose
  ``evidence["approval"]`` names it);
* ``authors``: per unit, every principal whose commit report the system accepted; the
  merger refuses an approval from any of them;
* ``queue``: queued heads in approval order, each with its latest decisive candidate test
  and conflict. An entry leaves the queue when its unit merges (``TrunkAdvanced``) or when
  the unit moves so that the queued head no longer stands (not working, not ready, or a
  different head);
* ``trunk``: the trunk commit as the merger last recorded it, what moved it there, the
  trunk gates' verdict on it, and the last trunk known green (what a revert goes back to);
* ``last_advance``: the latest merge that reached trunk, until it is settled (done, or
  reverted);
* ``reds``: per unit, the trunk-red findings sent to its author that are still open, with
  the interface (failing tests) each was about; a second red on the same interface, or
  the builder giving up, promotes them to ``contract-wrong``;
* ``adopted``: the configuration that judges trunk (the latest ``config.adopted`` fact),
  and ``adopt_claims``: operators' ``config.adopt`` claims the merger has not answered;
* ``gate_findings``: the open gate findings the red checks of the merger's own runs raised
  (candidates and trunk), which the merger resolves once a later trunk run passes their
  check (:mod:`projections.gate_findings`).
"""

from datetime import datetime
from typing import Any

import msgspec

from projections import gate_findings, merge_trunk
from projections.base import Fold
from projections.gate_findings import GateFindings
from projections.merge_trunk import Advance, RedRecord, Tested, TrunkView
from schemas import Event, FindingRaised, FindingResolved, UnitTransitioned
from schemas.adoption import ConfigAdopt, ConfigAdopted, config_digest
from schemas.authority import ANSWERS_CLAIM, REFUSAL_CLASS
from schemas.contract import ConfigLanded, ContractLanded
from schemas.lifecycle import FindingDismissed
from schemas.merges import (
    ApproveReport,
    CandidateTested,
    MergeConflicted,
    MergeQueued,
    MergeReverted,
    TrunkAdvanced,
    TrunkRecheck,
)
from schemas.reports import CommitReport
from schemas.reviews import VerdictAccepted


class Approval(msgspec.Struct, kw_only=True):
    """An approval waiting for the merger's answer."""

    id: str
    unit: str
    head: str
    approver: str
    role: str
    via: str
    at: datetime


class Adoption(msgspec.Struct, kw_only=True):
    """The configuration that judges trunk: the latest ``config.adopted`` fact."""

    id: str
    commit: str
    digest: str
    text: str
    why: str
    by: str
    cause: str | None = None
    """What it answers: the operator's claim, or the trunk advance of a merge."""


class AdoptClaim(msgspec.Struct, kw_only=True):
    """A ``config.adopt`` claim waiting for the merger's answer."""

    id: str
    role: str
    principal: str
    commit: str
    why: str


class QueueEntry(msgspec.Struct, kw_only=True):
    """One queued head: the ``MergeQueued`` id, the approval, and what happened to it since."""

    queued: str
    unit: str
    head: str
    approval: str
    approver: str
    via: str
    at: datetime
    tested: Tested | None = None
    """The latest decisive candidate test (it sat directly on the trunk of its time)."""
    conflicted: str | None = None
    """The ``MergeConflicted`` id, once the head collided with trunk."""


class MergesState(msgspec.Struct):
    approvals: list[Approval] = []
    commit_reports: dict[str, list[str]] = {}
    """Commit reports not answered yet: report id -> [unit, principal]."""
    authors: dict[str, list[str]] = {}
    queue: list[QueueEntry] = []
    trunk: TrunkView = msgspec.field(default_factory=TrunkView)
    last_advance: Advance | None = None
    reds: dict[str, list[RedRecord]] = {}
    queued: int = 0
    tested: int = 0
    merged: int = 0
    reverted: int = 0
    conflicted: int = 0
    promoted: int = 0
    refused: int = 0
    answers: dict[str, int] = {}
    """How many times each approval id has been answered: a re-stored copy of an approval
    is a second occurrence with the same id and gets its own answer (:func:`occurrence`)."""
    gate_findings: GateFindings = msgspec.field(default_factory=GateFindings)
    adopted: Adoption | None = None
    before_merge: Adoption | None = None
    """The adoption a merge's adoption replaced, while that one is in force: what a revert
    of that merge adopts again."""
    adopt_claims: list[AdoptClaim] = []


def initial() -> MergesState:
    return MergesState()


def apply(state: MergesState, event: Event) -> MergesState:
    match event:
        case CommitReport():
            state.commit_reports[event.id] = [event.unit, event.actor.principal]
        case UnitTransitioned():
            _transitioned(state, event)
        case ApproveReport():
            state.approvals.append(
                Approval(
                    id=event.id,
                    unit=event.unit,
                    head=event.head,
                    approver=event.actor.principal,
                    role=event.actor.role,
                    via="report",
                    at=event.at,
                )
            )
        case VerdictAccepted(decision="approve"):
            state.approvals.append(
                Approval(
                    id=event.id,
                    unit=event.unit,
                    head=event.head,
                    approver=event.reviewer,
                    role="reviewer",
                    via="verdict",
                    at=event.at,
                )
            )
        case MergeQueued():
            _answer(state, event.cause)
            state.queued += 1
            state.queue.append(
                QueueEntry(
                    queued=event.id,
                    unit=event.unit,
                    head=event.head,
                    approval=event.approval,
                    approver=event.approver,
                    via=event.via,
                    at=event.at,
                )
            )
        case CandidateTested():
            _tested(state, event)
            gate_findings.judged(state.gate_findings, event)
        case TrunkAdvanced():
            state.queue = [e for e in state.queue if e.unit != event.unit]
            merge_trunk.advanced(state, event)
        case MergeReverted():
            merge_trunk.reverted(state, event)
        case ContractLanded() | ConfigLanded():
            merge_trunk.landed(state, event)
        case MergeConflicted():
            state.conflicted += 1
            for entry in state.queue:
                if entry.queued == event.cause:
                    entry.conflicted = event.id
        case FindingRaised():
            _refusal(state, event)
            merge_trunk.finding(state, event)
            gate_findings.raised(state.gate_findings, event)
        case FindingResolved() | FindingDismissed():
            merge_trunk.resolved(state, event.finding)
        case TrunkRecheck() if event.actor.role in ("operator", "system"):
            state.trunk.recheck = event.id
        case ConfigAdopt():
            # Every role's claim is kept, so that the merger answers each (an agent's with
            # a refusal); only an operator's is ever turned into an adoption.
            state.adopt_claims.append(
                AdoptClaim(
                    id=event.id,
                    role=event.actor.role,
                    principal=event.actor.principal,
                    commit=event.commit,
                    why=event.why,
                )
            )
        case ConfigAdopted():
            state.before_merge = state.adopted if event.why == "merge" else None
            state.adopted = Adoption(
                id=event.id,
                commit=event.commit,
                digest=config_digest(event.text),  # what every run computes from the text
                text=event.text,
                why=event.why,
                by=event.by,
                cause=event.cause,
            )
            state.adopt_claims = [c for c in state.adopt_claims if c.id != event.cause]
        case _:
            pass
    return state


def _transitioned(state: MergesState, event: UnitTransitioned) -> None:
    if event.by == "commit" and event.cause is not None:
        claim = state.commit_reports.pop(event.cause, None)
        if claim is not None and claim[0] == event.unit:
            principals = state.authors.setdefault(event.unit, [])
            if claim[1] not in principals:
                principals.append(claim[1])
    stands = event.state == "working" and event.ready
    state.queue = [
        entry
        for entry in state.queue
        if entry.unit != event.unit
        or (stands and (event.commit is None or event.commit == entry.head))
    ]
    advance = state.last_advance
    if advance is not None and advance.unit == event.unit:
        if event.by == "merged":
            advance.done = True
        elif advance.reverted is not None:
            advance.returned = True


def _tested(state: MergesState, event: CandidateTested) -> None:
    state.tested += 1
    tested = merge_trunk.tested_of(event)
    if event.stage != "candidate":
        merge_trunk.checked(state, event, tested)
        return
    for entry in state.queue:
        if entry.queued == event.cause:
            entry.tested = tested


def _answer(state: MergesState, approval: str | None) -> bool:
    """Drop the oldest pending copy of ``approval``; True when one was pending."""
    for index, pending in enumerate(state.approvals):
        if pending.id == approval:
            del state.approvals[index]
            state.answers[approval] = state.answers.get(approval, 0) + 1
            return True
    return False


def occurrence(state: MergesState, approval: str) -> int:
    """Which occurrence of ``approval`` the oldest pending copy is (0: its first)."""
    return state.answers.get(approval, 0)


def _refusal(state: MergesState, event: FindingRaised) -> None:
    """A refusal answers what it names: a commit report, an approval, an adopt claim."""
    if event.cls != REFUSAL_CLASS:
        return
    evidence: dict[str, Any] = event.evidence
    report = evidence.get("report")
    if isinstance(report, str):
        state.commit_reports.pop(report, None)
    approval = evidence.get("approval")
    if isinstance(approval, str) and _answer(state, approval):
        state.refused += 1
    claim = evidence.get(ANSWERS_CLAIM)
    if isinstance(claim, str):
        state.adopt_claims = [c for c in state.adopt_claims if c.id != claim]


FOLD = Fold(name="merges", state_type=MergesState, initial=initial, apply=apply)


# -- queries ----------------------------------------------------------------------------


def authors(state: MergesState, unit: str) -> list[str]:
    """Principals whose commits of ``unit`` the system accepted (its authors)."""
    return list(state.authors.get(unit, []))


def entry_of(state: MergesState, unit: str) -> QueueEntry | None:
    for entry in state.queue:
        if entry.unit == unit:
            return entry
    return None
