"""The materialised finding lifecycle: what status shows of a finding an operator settled."""

from __future__ import annotations

from loopbus.render import render_state
from projections import FOLDS, finding_lifecycle
from schemas import Actor, FindingRaised, FindingResolved
from schemas.lifecycle import FindingClaim, FindingDismissed
from schemas.targets import CheckTarget

SYSTEM = Actor(role="system", principal="ratchet")
ALICE = Actor(role="operator", principal="alice")


def gate_finding(message: str) -> FindingRaised:
    return FindingRaised(
        project="p", actor=SYSTEM, producer="gate_runner", target=CheckTarget(check="lint"),
        severity="low", message=message,
    )  # fmt: skip


def test_status_shows_a_dismissal_as_what_by_whom_and_why() -> None:
    """A dismissal settled by the system is shown as 'dismissed as <reason> by <who>: <why>';
    a claim not answered yet is listed as awaiting; an unsettled finding is not kept."""
    raised, other = gate_finding("x"), gate_finding("y")
    claim = FindingClaim(project="p", actor=ALICE, finding=raised.id, action="dismiss",
                         reason="false-positive", why="generated code")  # fmt: skip
    fact = FindingDismissed(project="p", actor=SYSTEM, finding=raised.id,
                            reason="false-positive", why="generated code", claim=claim.id,
                            by="operator:alice")  # fmt: skip
    waiting = FindingClaim(project="p", actor=ALICE, finding=other.id, action="resolve",
                           why="fixed upstream")  # fmt: skip
    state = finding_lifecycle.FOLD.fold([raised, other, claim, fact, waiting])
    assert list(state.lives) == [raised.id]
    lines = render_state("finding_lifecycle", state)
    assert f"  {raised.id} dismissed as false-positive by operator:alice: generated code" in lines
    assert any("resolve" in line and "awaiting" in line for line in lines)
    resolved = FindingResolved(project="p", actor=SYSTEM, finding=other.id, why="ok")
    state = finding_lifecycle.FOLD.apply(state, resolved)
    assert state.lives[other.id].steps[-1].by == "operator:alice" and not state.pending
    assert "finding_lifecycle" in {f.name for f in FOLDS} and "ratchet" in {f.name for f in FOLDS}
