"""The story of a merge in the daemon's log: the merger's own facts, logged as they reach
its fold, in the order they happened."""

from __future__ import annotations

import structlog

from schemas import Event, FindingRaised, UnitTransitioned, authority
from schemas.merges import CandidateTested, MergeConflicted, MergeQueued, TrunkAdvanced

log = structlog.get_logger()


def note(event: Event) -> None:
    """Log the merger's own facts as they reach its fold (the story of a merge, in order)."""
    if isinstance(event, UnitTransitioned):  # built by the kernel from the merger's move
        log.info("merger.unit_transitioned", unit=event.unit, state=event.state, by=event.by)
        return
    match event:
        case MergeQueued():
            log.info("merger.queued", unit=event.unit, head=event.head, approver=event.approver)
        case CandidateTested(stage="trunk"):
            ran = sum(1 for check in event.checks if not check.cached)
            cached = len(event.checks) - ran
            log.info(
                "merger.trunk_checked",
                trunk=event.candidate,
                outcome=event.outcome,
                ran=ran,
                cached=cached,
            )
        case CandidateTested():
            log.info(
                "merger.candidate_tested",
                unit=event.unit,
                outcome=event.outcome,
                candidate=event.candidate,
                ahead=event.ahead,
            )
        case TrunkAdvanced():
            log.info("merger.trunk_advanced", unit=event.unit, merge=event.merge)
        case MergeConflicted():
            log.info("merger.conflicted", unit=event.unit, paths=event.paths)
        case FindingRaised(cls=authority.REFUSAL_CLASS):
            log.info("merger.approval_refused", unit=event.unit, code=event.criterion)
        case FindingRaised(cls="contract-wrong"):
            log.info("merger.promoted", unit=event.unit, finding=event.id)
