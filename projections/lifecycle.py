"""The ``lifecycle`` projection: every finding's status over time, and each gate's record.

Unlike the ``findings`` projection (open findings only), this fold remembers every finding
a project has had and each step of its life: raised, dismissed (with a reason), resolved,
reopened. It is what ``status`` shows as a finding's lifecycle, what the meta rule counts
(a gate's findings, those dismissed as false positives, those that led to a change), and
what the lifecycle daemon checks claims against. Claims not answered yet are kept in
``pending`` until the system's fact, or its refusal, names them.
"""

from datetime import datetime
from typing import Literal

import msgspec

from projections.base import Fold
from schemas import Event, FindingRaised, FindingResolved, format_target
from schemas.authority import ANSWERS_CLAIM as ANSWERS_CLAIM
from schemas.authority import refused_claim
from schemas.lifecycle import FindingClaim, FindingDismissed, FindingReopened
from schemas.targets import CheckTarget

Status = Literal["open", "dismissed", "resolved"]


def settled_as(event: FindingResolved | FindingDismissed | FindingReopened) -> Status:
    """The status a settling fact leaves its finding in (the one mapping every fold that
    tracks a finding's status uses; each fold checks first that the system published it)."""
    if isinstance(event, FindingResolved):
        return "resolved"
    return "dismissed" if isinstance(event, FindingDismissed) else "open"


class Step(msgspec.Struct, kw_only=True):
    """One step of a finding's life."""

    at: datetime
    status: Status
    by: str
    why: str = ""
    reason: str | None = None


class FindingLife(msgspec.Struct, kw_only=True):
    """A finding as raised, its current status and every step that led there."""

    raised: FindingRaised
    status: Status = "open"
    reason: str | None = None
    check: str | None = None
    steps: list[Step] = []


class GateTally(msgspec.Struct, kw_only=True):
    """What one gate's findings came to: the meta rule's measurement."""

    raised: int = 0
    false_positive: int = 0
    dismissed: int = 0
    true_positive: int = 0
    open: int = 0

    @property
    def false_positive_rate(self) -> float:
        return self.false_positive / self.raised if self.raised else 0.0


class LifecycleState(msgspec.Struct):
    findings: dict[str, FindingLife] = {}
    pending: dict[str, FindingClaim] = {}


def check_of(finding: FindingRaised) -> str | None:
    """The gate a finding is about: the check a gate runner or trunk gate ran, or a
    ``check:`` target."""
    if finding.producer == "meta_rule":
        return None  # a finding about the gate is not one of the gate's findings
    if isinstance(finding.target, CheckTarget):
        return finding.target.check
    if finding.producer in ("gate_runner", "trunk_gate"):
        check = finding.evidence.get("check") or finding.criterion
        return str(check) if check else None
    return None


def apply(state: LifecycleState, event: Event) -> LifecycleState:
    by = f"{event.actor.role}:{event.actor.principal}"
    match event:
        case FindingRaised():
            if event.id not in state.findings:
                state.findings[event.id] = FindingLife(
                    raised=event,
                    check=check_of(event),
                    steps=[Step(at=event.at, status="open", by=by, why=event.message)],
                )
            refused = refused_claim(event)
            if refused is not None:
                state.pending.pop(refused, None)
        case FindingClaim():
            state.pending[event.id] = event
        case FindingDismissed():
            _step(state, event.finding, "dismissed", event.at, event.by, event.why, event.reason)
            state.pending.pop(event.claim, None)
        case FindingReopened():
            _step(state, event.finding, "open", event.at, event.by, event.why, None)
            state.pending.pop(event.claim, None)
        case FindingResolved():
            _step(state, event.finding, "resolved", event.at, by, event.why, None)
            for claim_id, claim in list(state.pending.items()):
                if claim.finding == event.finding and claim.action == "resolve":
                    del state.pending[claim_id]
    return state


def _step(
    state: LifecycleState,
    finding: str,
    status: Status,
    at: datetime,
    by: str,
    why: str,
    reason: str | None,
) -> None:
    life = state.findings.get(finding)
    if life is None:
        return
    life.status = status
    life.reason = reason
    life.steps.append(Step(at=at, status=status, by=by, why=why, reason=reason))


FOLD = Fold(name="lifecycle", state_type=LifecycleState, initial=LifecycleState, apply=apply)


# -- queries ----------------------------------------------------------------------------


def tallies(state: LifecycleState) -> dict[str, GateTally]:
    """Per gate (check id): findings raised, dismissed (as false positives, and in all),
    resolved (true positives: they led to a change) and still open."""
    out: dict[str, GateTally] = {}
    for life in state.findings.values():
        if life.check is None:
            continue
        tally = out.setdefault(life.check, GateTally())
        tally.raised += 1
        if life.status == "dismissed":
            tally.dismissed += 1
            tally.false_positive += life.reason == "false-positive"
        elif life.status == "resolved":
            tally.true_positive += 1
        else:
            tally.open += 1
    return out


def closed(state: LifecycleState) -> list[FindingLife]:
    """Findings that are no longer open (dismissed or resolved), oldest first."""
    return sorted(
        (life for life in state.findings.values() if life.status != "open"),
        key=lambda life: life.raised.id,
    )


def target_text(life: FindingLife) -> str:
    return format_target(life.raised.target)
