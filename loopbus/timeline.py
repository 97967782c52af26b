"""The demo's timeline: one plain line for each event a newcomer should see happen.

Pure over events, except for the question "which files did this merged unit share with
units merged before it", which the caller answers from the repository (``shared``).
"""

from __future__ import annotations

from collections.abc import Callable

from schemas import Event, FindingRaised, UnitTransitioned
from schemas.charter import (
    CharterApproved,
    RunCheckedIn,
    RunCriteriaChecked,
    RunCriteriaPinned,
    RunEnded,
    RunFinalizing,
)
from schemas.contract import ContractLanded
from schemas.decisions import DecisionRecorded, DecisionRequested
from schemas.gates import GateSuiteCompleted
from schemas.merges import TrunkAdvanced
from schemas.planning import PlanAttemptRefused, PlanProposed, ReconRecorded
from schemas.reports import CommitReport
from schemas.reviews import RoundUnchanged, VerdictAccepted
from schemas.slices import RetryDecided, SliceClosed, SlicePlanAccepted, UnitDispatched
from schemas.verify import SliceShipJudged, WaveVerified
from schemas.wave_review import WaveReviewed

Shared = Callable[[TrunkAdvanced], list[tuple[str, list[str]]]]
"""(earlier merged unit, files both changed) for a merge."""


class Timeline:
    """Turns events into lines, remembering the little it needs (rounds per unit)."""

    def __init__(self, shared: Shared | None = None) -> None:
        self.shared = shared
        self.rounds: dict[str, int] = {}

    def lines(self, event: Event) -> list[str]:
        match event:
            case SlicePlanAccepted(plan=plan):
                units = ", ".join(u.id for u in plan.units)
                return [f"plan {plan.slice} accepted: {len(plan.units)} units ({units})"]
            case UnitDispatched():
                return [
                    f"{event.unit}: dispatched (position {event.position + 1}) on "
                    f"{(event.base or '?')[:12]}"
                ]
            case CommitReport(actor=actor):
                self.rounds[event.unit] = self.rounds.get(event.unit, 0) + 1
                return [
                    f"{event.unit}: builder {actor.principal} committed {event.sha[:12]} "
                    f"(round {self.rounds[event.unit]})"
                ]
            case GateSuiteCompleted(reason="unit", unit=unit) if unit:
                colour = "green" if event.outcome == "pass" else "red"
                return [f"{unit}: gates {colour} on {(event.commit or '?')[:12]}"]
            case FindingRaised(producer="gate_runner", unit=unit) if unit:
                return [f"{unit}:   gate finding: {event.message}"]
            case FindingRaised(producer="reviewer", unit=unit) if unit:
                return [f"{unit}:   review finding: {event.message}"]
            case VerdictAccepted():
                return [f"{event.unit}: review by {event.reviewer}: {event.decision}"]
            case RoundUnchanged():
                return [
                    f"{event.unit}: round {event.round} changed nothing: rung {event.rung} "
                    f"-> {event.to_rung}"
                ]
            case RetryDecided(retry=True):
                return [f"{event.unit}: retried on rung {event.to_rung} because {event.why}"]
            case RetryDecided():
                return [f"{event.unit}: not retried: {event.why}"]
            case DecisionRequested(routed="operator"):
                return [f"{event.unit}: decision {event.decision_id} waits on the operator"]
            case DecisionRecorded():
                return [
                    f"{event.unit}: novel decision {event.decision_id!r} -> {event.chosen} "
                    f"(by {event.by}, confidence {event.stated_confidence or event.confidence}): "
                    f"{event.question}"
                ]
            case TrunkAdvanced():
                lines = [f"{event.unit}: merged into {event.trunk} as {event.merge[:12]}"]
                for other, files in self.shared(event) if self.shared else []:
                    lines.append(
                        f"{event.unit}:   {', '.join(files)} also changed by {other}: "
                        "combined by the entity merge driver"
                    )
                return lines
            case UnitTransitioned(state=state) if state in ("done", "failed", "lost"):
                why = f" ({event.outcome.summary})" if event.outcome and state != "done" else ""
                return [f"{event.unit}: {state.upper()}{why}"]
            case SliceClosed(boot=boot):
                return [
                    f"slice {event.slice} closed: boot {boot.outcome} ({boot.command}); "
                    f"{len(event.done)} done, {len(event.failed)} failed, {len(event.lost)} lost"
                ]
        return self.run_lines(event)

    def run_lines(self, event: Event) -> list[str]:
        """The run around the slices: the charter, its criteria on trunk, the contract."""
        match event:
            case CharterApproved(charter=charter):
                return [
                    f"charter {charter.id} approved by {event.by or 'the operator'}: "
                    f"{len(charter.criteria)} criteria, autonomy {charter.autonomy}"
                ]
            case RunCriteriaChecked():
                total = len(event.held) + len(event.failing)
                return [f"criteria on trunk {event.trunk[:12]}: {len(event.held)} of {total} hold"]
            case ReconRecorded():
                return [f"reconnaissance recorded {len(event.facts)} facts {event.error}".rstrip()]
            case PlanProposed(plan=plan):
                contract = " with a contract" if plan.contract else ""
                then = "submitted" if event.autonomy == "full" else "waits for the operator"
                return [
                    f"planner proposed slice {event.slice} (try {event.attempt}): "
                    f"{len(plan.units)} units{contract}; {then}"
                ]
            case PlanAttemptRefused():
                return [
                    f"planner's slice {event.slice} refused (try {event.attempt}): "
                    f"{'; '.join(event.problems)}"
                ]
            case ContractLanded():
                added = [*event.checks, *(c.rpartition("::")[2] for c in event.criteria)]
                return [
                    f"contract of {event.slice} landed as {event.commit[:12]}: "
                    f"added {', '.join(added) or 'nothing'}"
                ]
            case RunCriteriaPinned():
                at = event.trunk[:12] or "(none)"
                pinned = ", ".join(sorted(event.pins)) or "none"
                lines = [f"criteria pinned at trunk {at}: {pinned}"]
                unpinned = sorted(event.unpinned.items())
                return lines + [f"  {c} unpinned: {why}" for c, why in unpinned]
            case RunCheckedIn():
                return [f"run checked in: {event.detail or 'half the wall clock is spent'}"]
            case RunFinalizing():
                return [f"run finalizing: {event.detail}"]
            case RunEnded():
                detail = f" ({event.detail})" if event.detail else ""
                return [f"run ended: {event.reason}{detail}"]
        return self.after_merge_lines(event)

    @staticmethod
    def after_merge_lines(event: Event) -> list[str]:
        """What runs once a wave merged, and the SHIP verdict (docs/verify.md)."""
        match event:
            case WaveVerified():
                at = f"wave {event.wave} of {event.slice} verified code-cold"
                if event.error:
                    return [f"{at}: could not verify ({event.error})"]
                return [
                    f"{at} on {event.trunk[:12]}: {len(event.findings)} findings, "
                    f"{len(event.unreached)} unreached"
                ]
            case WaveReviewed():
                at = f"wave {event.wave} of {event.slice} reviewed whole"
                if event.error:
                    return [f"{at}: no review ({event.error})"]
                reopened = f"; re-opened {', '.join(event.reopened)}" if event.reopened else ""
                return [f"{at} ({', '.join(event.axes)}): {event.verdict}{reopened}"]
            case SliceShipJudged(shipped=True):
                return [f"slice {event.slice} SHIPPED"]
            case SliceShipJudged():
                more = f" (+{len(event.reasons) - 2} more)" if len(event.reasons) > 2 else ""
                return [f"slice {event.slice} not shipped: {'; '.join(event.reasons[:2])}{more}"]
        return []
