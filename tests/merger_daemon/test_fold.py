"""The merges projection alone: a pure fold of events, no bus, no repository."""

from __future__ import annotations

from projections import merges
from schemas import Actor, FindingRaised, UnitTransitioned
from schemas.merges import ApproveReport, MergeQueued
from schemas.reports import CommitReport
from schemas.targets import RecordTarget

SYSTEM = Actor(role="system", principal="merger")
ALICE = Actor(role="builder", principal="alice")
HEAD = "a" * 40
NEXT = "b" * 40


def _ready(report: CommitReport, head: str) -> list[UnitTransitioned]:
    return [
        UnitTransitioned(
            project="p", actor=SYSTEM, unit="U1", state="working", prior="working",
            by="commit", cause=report.id, commit=head,
        ),
        UnitTransitioned(
            project="p", actor=SYSTEM, unit="U1", state="working", prior="working",
            by="gates", ready=True, cause=report.id, commit=head,
        ),
    ]  # fmt: skip


def test_authors_are_the_principals_of_accepted_commit_reports() -> None:
    """A commit report the system accepted makes its principal an author; a refused one does not."""
    accepted = CommitReport(project="p", actor=ALICE, unit="U1", sha=HEAD)
    mallory = Actor(role="builder", principal="mallory")
    refused = CommitReport(project="p", actor=mallory, unit="U1", sha=NEXT)
    refusal = FindingRaised(
        project="p", actor=SYSTEM, producer="builder", target=RecordTarget(id=refused.id),
        severity="medium", cls="refused-transition", message="no", evidence={"report": refused.id},
    )  # fmt: skip
    state = merges.FOLD.fold([accepted, refused, *_ready(accepted, HEAD), refusal])
    assert merges.authors(state, "U1") == ["alice"]
    assert state.commit_reports == {}


def test_queue_entry_leaves_when_the_unit_submits_another_head() -> None:
    """A queued head stops standing once the unit moves to another commit."""
    report = CommitReport(project="p", actor=ALICE, unit="U1", sha=HEAD)
    approval = ApproveReport(
        project="p", actor=Actor(role="operator", principal="bob"), unit="U1", head=HEAD
    )
    queued = MergeQueued(
        project="p", actor=SYSTEM, unit="U1", head=HEAD, approval=approval.id,
        approver="bob", via="report", cause=approval.id,
    )  # fmt: skip
    state = merges.FOLD.fold([report, *_ready(report, HEAD), approval])
    assert [a.id for a in state.approvals] == [approval.id]
    state = merges.FOLD.fold([queued], state)
    assert state.approvals == [] and [e.head for e in state.queue] == [HEAD]
    again = CommitReport(project="p", actor=ALICE, unit="U1", sha=NEXT)
    state = merges.FOLD.fold([again, _ready(again, NEXT)[0]], state)
    assert state.queue == []
