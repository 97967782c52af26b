"""The ``finding_lifecycle`` projection: the findings whose lifecycle someone settled.

The ``lifecycle`` fold (:mod:`projections.lifecycle`) remembers every finding a
project ever had, which the ratchet daemon needs to measure gates but which is far too
large to materialise: 30,000 findings fold into 16 MB. What ``status`` shows is the
lifecycle an operator gave a finding: dismissed as what, by whom, why; resolved or
reopened by whom, why. This fold keeps exactly that, plus the claims the ratchet daemon
has not answered yet, so the projector and ``replay --until`` carry it cheaply.
"""

from datetime import datetime

import msgspec

from projections.base import Fold
from projections.lifecycle import Status
from schemas import Event, FindingRaised, FindingResolved, format_target
from schemas.authority import refused_claim
from schemas.lifecycle import FindingClaim, FindingDismissed, FindingReopened


class Settled(msgspec.Struct, kw_only=True):
    at: datetime
    status: Status
    by: str
    why: str
    reason: str | None = None


class Life(msgspec.Struct, kw_only=True):
    """A finding someone dismissed, resolved or reopened: its status and those steps."""

    finding: str
    status: Status
    reason: str | None = None
    target: str = ""
    message: str = ""
    steps: list[Settled] = []


class Claimed(msgspec.Struct, kw_only=True):
    claim: str
    finding: str
    action: str
    by: str
    why: str


class FindingLifecycleState(msgspec.Struct):
    lives: dict[str, Life] = {}
    pending: dict[str, Claimed] = {}
    """Operators' claims the ratchet daemon has not answered yet."""


def apply(state: FindingLifecycleState, event: Event) -> FindingLifecycleState:
    match event:
        case FindingClaim():
            by = f"{event.actor.role}:{event.actor.principal}"
            state.pending[event.id] = Claimed(
                claim=event.id, finding=event.finding, action=event.action, by=by, why=event.why
            )
        case FindingDismissed():
            state.pending.pop(event.claim, None)
            _settle(
                state,
                event.finding,
                Settled(
                    at=event.at, status="dismissed", by=event.by, why=event.why, reason=event.reason
                ),
            )
        case FindingReopened():
            state.pending.pop(event.claim, None)
            life = _settle(
                state,
                event.finding,
                Settled(at=event.at, status="open", by=event.by, why=event.why),
            )
            life.target = format_target(event.original.target)
            life.message = event.original.message
        case FindingResolved():
            for claim_id, claimed in list(state.pending.items()):
                if claimed.finding == event.finding and claimed.action == "resolve":
                    del state.pending[claim_id]
                    _settle(
                        state,
                        event.finding,
                        Settled(at=event.at, status="resolved", by=claimed.by, why=claimed.why),
                    )
            known = state.lives.get(event.finding)
            if known is not None and known.status != "resolved":
                _settle(
                    state,
                    event.finding,
                    Settled(at=event.at, status="resolved", by="system", why=event.why),
                )
        case FindingRaised() if event.actor.role == "system":
            refused = refused_claim(event)
            if refused is not None:
                state.pending.pop(refused, None)  # the ratchet daemon refused it
    return state


def _settle(state: FindingLifecycleState, finding: str, step: Settled) -> Life:
    life = state.lives.get(finding)
    if life is None:
        life = state.lives[finding] = Life(finding=finding, status=step.status)
    life.status, life.reason = step.status, step.reason
    life.steps.append(step)
    return life


FOLD = Fold(
    name="finding_lifecycle",
    state_type=FindingLifecycleState,
    initial=FindingLifecycleState,
    apply=apply,
)


def describe(life: Life) -> str:
    """One line: the finding, its status and the last step (``dismissed as X by Y: why``)."""
    last = life.steps[-1]
    what = f"dismissed as {last.reason}" if last.status == "dismissed" else last.status
    if last.status == "open":
        what = "reopened"
    about = f" ({life.target})" if life.target else ""
    return f"{life.finding}{about} {what} by {last.by}: {last.why}"
