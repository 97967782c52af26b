"""What the log alone warrants of the merger (pure): answers to approvals, and promotions.

An approval (an approve report, or an accepted approve verdict) is answered exactly once:
the head is queued (``MergeQueued``) or the claim is refused with a finding whose
criterion says why. A unit that fails while its trunk-red findings are open hands them
to planning as one ``contract-wrong`` finding. Both come before anything the repository
is needed for, oldest first, one at a time.
"""

from __future__ import annotations

import msgspec

from projections import merge_trunk
from projections import merges as merges_fold
from projections.intents import Publish, PublishBatch, Publishing
from projections.merges import Approval, MergesState
from projections.units import UnitsState, UnitView
from schemas import Event
from schemas.ids import answer_id
from schemas.merges import MergeQueued
from workers.kernel import World
from workers.merger import evidence, facts
from workers.merger.facts import Author

REPORT_APPROVER_ROLES = frozenset({"operator"})
"""Who may approve with a report: an operator. A reviewer approves through its verdict,
which the reviewer daemon accepts (a fact); an approve report from an agent is refused."""


def publish(world: World, *events: Event) -> Publishing:
    """Publish ``events`` (atomically when several), stamped with the decision's time."""
    stamped = tuple(msgspec.structs.replace(e, at=world.now) for e in events)
    return Publish(stamped[0]) if len(stamped) == 1 else PublishBatch(stamped)


def author(world: World, merges: MergesState, units: UnitsState, unit: str) -> Author:
    """Who findings about ``unit`` go to, and the reds of it still open."""
    view = units.units.get(unit)
    return Author(
        project=world.project,
        actor=world.actor,
        unit=unit,
        slice=view.slice if view is not None and view.slice else None,
        authors=tuple(merges_fold.authors(merges, unit)),
        open_reds=tuple(merge_trunk.open_reds(merges, unit)),
    )


def answer(world: World, merges: MergesState, units: UnitsState) -> Publishing | None:
    """The answer to the oldest approval that can be answered (``None``: none waits)."""
    for approval in merges.approvals:
        try:
            return publish(world, answer_to(world, merges, units, approval))
        except Exception:  # a claim the merger cannot process must not block the queue
            continue
    return None


def salted(salt: str, merges: MergesState, approval: Approval) -> str:
    """The answer's salt for this occurrence of ``approval`` (a re-stored copy is answered
    again under a new id instead of being de-duplicated as the first answer's repeat)."""
    seen = merges_fold.occurrence(merges, approval.id)
    return salt if seen == 0 else f"{salt}#{seen}"


def answer_to(world: World, merges: MergesState, units: UnitsState, approval: Approval) -> Event:
    """Queue the approved head, or refuse the approval with a finding saying why."""
    view = units.units.get(approval.unit)
    authors = merges_fold.authors(merges, approval.unit)
    head = approval.head or (view.head if view is not None else None) or ""
    refusal = refuse(approval, view, authors, head, merges)
    if refusal is None:
        return MergeQueued(
            id=answer_id(approval.id, salted("queued", merges, approval)),
            project=world.project,
            actor=world.actor,
            unit=approval.unit,
            head=head,
            approval=approval.id,
            approver=approval.approver,
            via="verdict" if approval.via == "verdict" else "report",
            cause=approval.id,
        )
    code, message = refusal
    return evidence.refused_approval(
        id=answer_id(approval.id, salted("refused", merges, approval)),
        project=world.project,
        actor=world.actor,
        approval=approval.id,
        unit=approval.unit,
        slice=view.slice if view is not None and view.slice else None,
        role=approval.role,
        approver=approval.approver,
        code=code,
        message=message,
        details={
            "authors": authors,
            "head": approval.head,
            "unit_head": view.head if view is not None else None,
            "via": approval.via,
        },
    )


def refuse(
    approval: Approval,
    view: UnitView | None,
    authors: list[str],
    head: str,
    state: MergesState,
) -> tuple[str, str] | None:
    """(code, message) when an approval cannot be acted on, else ``None``."""
    if approval.via == "report" and approval.role not in REPORT_APPROVER_ROLES:
        return (
            "approver-role",
            f"an approve report must come from an operator, not role {approval.role!r}; a "
            "reviewer approves through its verdict, which the reviewer daemon accepts",
        )
    if view is None or not view.slice:
        return "unit-not-planned", f"unit {approval.unit} was never planned"
    if approval.approver in authors:
        return (
            "self-approval",
            f"{approval.approver} authored unit {approval.unit} and cannot approve it; "
            "an approval must come from a principal other than the unit's author",
        )
    if view.state != "working" or not view.ready:
        state_text = view.state or "planned"
        return (
            "not-ready",
            f"unit {approval.unit} is {state_text}"
            + (", not ready" if view.state == "working" else "")
            + "; only a ready unit can be approved for merge",
        )
    if head != view.head:
        return (
            "head-mismatch",
            f"the approval names {head or 'no commit'}, but unit {approval.unit}'s head is "
            f"{view.head}; approve the head that was reviewed",
        )
    entry = merges_fold.entry_of(state, approval.unit)
    if entry is not None and entry.head == head:
        return "already-queued", f"{head[:12]} of unit {approval.unit} is already queued"
    return None


def promote(world: World, merges: MergesState, units: UnitsState) -> Publishing | None:
    """A unit that failed with trunk-red findings open: planning owns them now."""
    for unit, records in merges.reds.items():
        view = units.units.get(unit)
        if view is None or view.state != "failed":
            continue
        ended = view.outcome.ended_by if view.outcome is not None else "failed"
        cause = view.last_event or records[-1].finding
        who = author(world, merges, units, unit)
        promotion = evidence.contract_wrong(
            id=answer_id(cause, "promote"),
            project=who.project,
            actor=who.actor,
            unit=unit,
            slice=view.slice or None,
            why="gave-up" if ended == "gave-up" else ended,
            promoted=records,
            interface=sorted({t for r in records for t in r.interface}),
            authors=who.authors,
            cause=cause,
        )
        return publish(world, promotion, *facts.closings(who, records, promotion.id))
    return None
