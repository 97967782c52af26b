"""The facts the merger publishes, built from the folded state and what the shell measured.

Pure (no I/O): the decision (``decide.py``) builds the ones it can from the state alone;
the shell (``daemon.py``) builds the ones that need what only the repository knows (the
sibling diff, a revert commit) with the same functions, once it has read or written it.
Every id that must not repeat is derived from what the fact answers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from projections import gate_findings, merge_trunk
from projections.gate_findings import GateFindings
from projections.merge_trunk import Advance, RedRecord, Tested
from projections.merges import QueueEntry
from schemas import Actor, Event, FindingRaised, FindingResolved
from schemas.ids import answer_id
from schemas.merges import (
    CandidateTested,
    CheckVerdict,
    FailingTest,
    MergeConflicted,
    MergeReverted,
    TrunkAdvanced,
)
from workers.history import DIFF_CAP, Siblings
from workers.merger import evidence
from workers.merger.gates import TrunkVerdict
from workers.merger.gitops import MergeAttempt
from workers.merger.seen import CAUSE, REVERTS, UNIT

ERROR_CAP = 2000


@dataclass(frozen=True)
class Author:
    """Who a unit's findings are about: the unit, its slice, and the principals who wrote it."""

    project: str
    actor: Actor
    unit: str
    slice: str | None
    authors: tuple[str, ...]
    open_reds: tuple[RedRecord, ...] = ()
    """The unit's trunk-red findings still open (a red on the same interface promotes)."""


@dataclass(frozen=True)
class RedCase:
    """A merge that turned the trunk gates red, but for the sibling diff (the shell reads
    what trunk ``onto`` gained since ``head`` branched)."""

    who: Author
    stage: str
    head: str
    commit: str
    tree: str
    onto: str
    failing: tuple[FailingTest, ...]
    checks: tuple[CheckVerdict, ...]
    cause: str
    reverted_by: str | None = None

    def reverted(self, commit: str) -> RedCase:
        return replace(self, reverted_by=commit)


def closings(who: Author, records: list[RedRecord], promotion: str) -> list[Event]:
    """The author's trunk-red findings, closed because planning owns them now."""
    return [
        evidence.promoted_away(
            id=answer_id(r.finding, "promoted"),
            project=who.project,
            actor=who.actor,
            record=r,
            promotion=promotion,
        )
        for r in records
    ]


def red_findings(case: RedCase, siblings: Siblings) -> tuple[list[Event], str]:
    """The author's trunk-red finding, or, on a second red on the same interface, the
    contract-wrong promotion (and the closing of what it promotes). Returns the events
    and the id of the finding sent."""
    who = case.who
    failing = list(case.failing)
    interface = evidence.interface_of(failing)
    overlapping = [r for r in who.open_reds if merge_trunk.same_interface(r, interface)]
    if overlapping:
        promotion = evidence.contract_wrong(
            id=answer_id(case.cause, "promote"),
            project=who.project,
            actor=who.actor,
            unit=who.unit,
            slice=who.slice,
            why="red-again",
            promoted=overlapping,
            interface=sorted(set(interface).intersection(*(r.interface for r in overlapping))),
            failing=failing,
            siblings=siblings,
            authors=who.authors,
            cause=case.cause,
        )
        return [promotion, *closings(who, overlapping, promotion.id)], promotion.id
    finding = evidence.trunk_red(
        id=answer_id(case.cause, "red"),
        project=who.project,
        actor=who.actor,
        unit=who.unit,
        slice=who.slice,
        stage="candidate" if case.stage == "candidate" else "trunk",
        head=case.head,
        commit=case.commit,
        tree=case.tree,
        failing=failing,
        checks=case.checks,
        siblings=siblings,
        authors=who.authors,
        cause=case.cause,
        reverted_by=case.reverted_by,
    )
    return [finding], finding.id


def unit_reverted(
    case: RedCase, siblings: Siblings, advance: Advance, trunk: str, tree: str
) -> list[Event]:
    """Trunk went red after ``advance`` and the merge was undone by ``case.reverted_by``:
    the finding (or promotion) and the revert, for one atomic batch."""
    assert case.reverted_by is not None
    events, finding = red_findings(case, siblings)
    reverted = MergeReverted(
        id=answer_id(case.cause, "revert"),
        project=case.who.project,
        actor=case.who.actor,
        trunk=trunk,
        unit=advance.unit,
        merge=advance.merge,
        revert=case.reverted_by,
        tree=tree,
        failing=list(case.failing),
        finding=finding,
        cause=case.cause,
    )
    return [*events, reverted]


def outside_reverted(
    project: str,
    actor: Actor,
    trunk: str,
    pushed: str,
    checked: Tested,
    *,
    commit: str,
    tree: str,
    diff: str,
    author: str | None = None,
) -> list[Event]:
    """A red push the merger did not make, undone by ``commit`` (whose tree is ``tree``):
    the operator's ``trunk-tampered`` finding naming the commit and its author, and the
    revert, for one atomic batch."""
    finding = evidence.trunk_red_unowned(
        author=author,
        id=answer_id(checked.id, "red"),
        project=project,
        actor=actor,
        trunk=trunk,
        commit=pushed,
        failing=list(checked.failing),
        reverted_by=commit,
        diff=diff[:DIFF_CAP],
    )
    reverted = MergeReverted(
        id=answer_id(checked.id, "revert"),
        project=project,
        actor=actor,
        trunk=trunk,
        unit=None,
        merge=pushed,
        revert=commit,
        tree=tree,
        failing=list(checked.failing),
        finding=finding.id,
        cause=checked.id,
    )
    return [finding, reverted]


def red_notice(project: str, actor: Actor, trunk: str, ref: str, checked: Tested) -> FindingRaised:
    """Trunk is red and no green trunk is known to go back to: told once, to the operator."""
    return evidence.trunk_red_unowned(
        id=answer_id(checked.id, "notice"),
        project=project,
        actor=actor,
        trunk=trunk,
        commit=ref,
        failing=list(checked.failing),
        reverted_by=None,
        diff="",
    )


def advanced(
    project: str, actor: Actor, trunk: str, entry: QueueEntry, tested: Tested
) -> TrunkAdvanced:
    """Trunk moved to the candidate ``tested`` green on it."""
    assert tested.base is not None
    return TrunkAdvanced(
        id=answer_id(tested.id, "advance"),
        project=project,
        actor=actor,
        trunk=trunk,
        unit=entry.unit,
        commit=entry.head,
        merge=tested.candidate,
        tree=tested.tree,
        previous=tested.base,
        cause=tested.id,
    )


def candidate_tested(
    project: str,
    actor: Actor,
    entry: QueueEntry,
    attempt: MergeAttempt,
    verdict: TrunkVerdict,
    *,
    base: str,
    ahead: tuple[str, ...],
) -> CandidateTested:
    """The decisive result of the queue's head: its candidate sat directly on trunk
    ``base`` (``ahead``: the units it was stacked on when its test started)."""
    assert attempt.commit is not None
    return CandidateTested(
        id=answer_id(entry.queued, f"tested:{attempt.commit}"),
        project=project,
        actor=actor,
        stage="candidate",
        unit=entry.unit,
        head=entry.head,
        candidate=attempt.commit,
        tree=attempt.tree or verdict.tree,
        base=base,
        ahead=list(ahead),
        outcome=verdict.outcome,
        checks=verdict.checks,
        failing=verdict.failing,
        error=verdict.error[:ERROR_CAP],
        suite=verdict.suite,
        cause=entry.queued,
        config=verdict.config,
    )


def trunk_green_again(world: Any, findings: list[str], checked: Tested) -> list[Event]:
    """The red-trunk notices still open, resolved: trunk is checked green again."""
    why = f"trunk is green again at {checked.candidate[:12]}"
    return [_resolved_by(world, checked, "green", finding, why) for finding in findings]


def trunk_checks_passed(
    world: Any, tracked: GateFindings, checked: Tested
) -> list[FindingResolved]:
    """The open findings of the merger's earlier red runs whose check trunk passes now."""
    held = gate_findings.no_longer_held(tracked, checked.checks)
    return [
        _resolved_by(
            world,
            checked,
            "passed",
            finding,
            f"check {check} passes on trunk {checked.candidate[:12]}",
        )
        for finding, check in held.items()
    ]


def _resolved_by(world: Any, checked: Tested, salt: str, finding: str, why: str) -> FindingResolved:
    """``finding`` resolved by the trunk run ``checked`` (one id per run and finding)."""
    return FindingResolved(
        id=answer_id(checked.id, f"{salt}:{finding}"),
        project=world.project,
        actor=world.actor,
        finding=finding,
        why=why,
    )


def trunk_tested(
    project: str,
    actor: Actor,
    verdict: TrunkVerdict,
    *,
    ref: str,
    tree: str,
    unit: str | None,
    head: str | None,
    cause: str | None,
) -> CandidateTested:
    """The trunk gates' run on trunk ``ref``: ``unit`` and ``head`` when a merge of the
    merger put it there, ``cause`` the fact that moved it (``None``: the merger did not)."""
    return CandidateTested(
        project=project,
        actor=actor,
        stage="trunk",
        unit=unit,
        head=head,
        candidate=ref,
        tree=tree,
        base=None,
        outcome=verdict.outcome,
        checks=verdict.checks,
        failing=verdict.failing,
        error=verdict.error[:ERROR_CAP],
        suite=verdict.suite,
        cause=cause,
        config=verdict.config,
    )


def conflict(who: Author, entry: QueueEntry, base: str, attempt: MergeAttempt) -> list[Event]:
    """The queue's head does not merge onto trunk ``base``: the author's finding with the
    hunks, and the conflict fact."""
    finding = evidence.merge_conflict(
        id=answer_id(entry.queued, "conflict-finding"),
        project=who.project,
        actor=who.actor,
        unit=entry.unit,
        slice=who.slice,
        head=entry.head,
        base=base,
        files=attempt.conflicts,
        authors=who.authors,
        cause=entry.queued,
        merge_base=attempt.base,
    )
    conflicted = MergeConflicted(
        id=answer_id(entry.queued, "conflict"),
        project=who.project,
        actor=who.actor,
        unit=entry.unit,
        head=entry.head,
        base=base,
        paths=[f.path for f in attempt.conflicts],
        finding=finding.id,
        cause=entry.queued,
    )
    return [finding, conflicted]


def revert_message(advance: Advance, cause: str) -> str:
    return (
        f"Revert unit {advance.unit}: trunk gates red after it merged\n\n"
        f"{UNIT}: {advance.unit}\n"
        f"{REVERTS}: {advance.merge}\n"
        f"{CAUSE}: {cause}\n"
    )


def restore_message(trunk: str, ref: str, checked: Tested) -> str:
    return (
        f"Restore {trunk} to its last green tree: gates red at {ref[:12]}\n\n"
        f"{REVERTS}: {ref}\n"
        f"{CAUSE}: {checked.id}\n"
    )
