"""The ``findings`` projection: open findings per unit, keyed on (target, severity, criterion).

The same key raised again (by any producer) is one open finding seen more than once, not
two findings; that is what makes rounds comparable and keeps the state bounded by the
number of distinct open findings rather than by the number of events.
"""

from datetime import datetime

import msgspec

from projections.base import Fold
from schemas import (
    Event,
    FindingRaised,
    FindingResolved,
    FoldQuarantined,
    MessageQuarantined,
    format_target,
)
from schemas.lifecycle import FindingDismissed, FindingReopened

PROJECT_SCOPE = "-"
"""The unit key for findings that concern no single unit (plan, budget, profile …)."""


class OpenFinding(msgspec.Struct, kw_only=True):
    """One open finding as first raised, with how often its key has been raised since."""

    id: str
    producer: str
    target: str
    severity: str
    criterion: str
    cls: str
    message: str
    unit: str | None = None
    slice: str | None = None
    owner: str | None = None
    raised_at: datetime
    last_raised_at: datetime
    times: int = 1
    reopened_at: datetime | None = None
    """When an operator last reopened it (a resolution older than that does not stand)."""


class FindingsState(msgspec.Struct):
    """Open findings: unit (or ``-``) -> key text -> finding."""

    open: dict[str, dict[str, OpenFinding]] = {}
    resolved: int = 0


def key_text(target: str, severity: str, criterion: str) -> str:
    return f"{target}|{severity}|{criterion}"


def initial() -> FindingsState:
    return FindingsState()


def open_finding(event: FindingRaised) -> OpenFinding:
    return OpenFinding(
        id=event.id,
        producer=event.producer,
        target=format_target(event.target),
        severity=event.severity,
        criterion=event.criterion,
        cls=event.cls,
        message=event.message,
        unit=event.unit,
        slice=event.slice,
        owner=event.owner,
        raised_at=event.at,
        last_raised_at=event.at,
    )


def apply(state: FindingsState, event: Event) -> FindingsState:
    match event:
        case FindingRaised():
            _raise(state, open_finding(event))
        case FindingReopened(original=original):
            reopened = open_finding(original)
            reopened.reopened_at = event.at
            _raise(state, reopened)
        case MessageQuarantined():
            # A message nobody can read is a finding about the machinery, owned by standards.
            _raise(
                state,
                OpenFinding(
                    id=event.id,
                    producer="standards",
                    target=f"record:seq-{event.original_seq}",
                    severity="high",
                    criterion="decodable-log",
                    cls="quarantined",
                    message=f"seq {event.original_seq} on {event.original_subject}: {event.reason}",
                    owner="standards",
                    raised_at=event.at,
                    last_raised_at=event.at,
                ),
            )
        case FoldQuarantined(actor=actor) if actor.role == "system":
            # A fold that cannot take an event: a defect in the machinery, owned by standards.
            _raise(
                state,
                OpenFinding(
                    id=event.id,
                    producer="standards",
                    target=f"record:seq-{event.original_seq}",
                    severity="high",
                    criterion=f"fold-{event.fold}",
                    cls="quarantined",
                    message=(
                        f"fold {event.fold} skipped seq {event.original_seq} "
                        f"({event.original_kind} on {event.original_subject}): {event.reason}"
                    ),
                    owner="standards",
                    raised_at=event.at,
                    last_raised_at=event.at,
                ),
            )
        case FindingResolved() | FindingDismissed():
            for scope, findings in list(state.open.items()):
                for key, finding in list(findings.items()):
                    if finding.id == event.finding:
                        del findings[key]
                        state.resolved += 1
                if not findings:
                    del state.open[scope]
        case _:
            pass
    return state


def _raise(state: FindingsState, finding: OpenFinding) -> None:
    scope = state.open.setdefault(finding.unit or PROJECT_SCOPE, {})
    key = key_text(finding.target, finding.severity, finding.criterion)
    existing = scope.get(key)
    if existing is None:
        scope[key] = finding
    else:
        existing.times += 1
        existing.last_raised_at = finding.raised_at


FOLD = Fold(name="findings", state_type=FindingsState, initial=initial, apply=apply)


# -- queries ----------------------------------------------------------------------------


def open_findings(state: FindingsState, unit: str | None = None) -> list[OpenFinding]:
    """Open findings, for one unit or all, oldest first."""
    scopes = [state.open.get(unit, {})] if unit is not None else list(state.open.values())
    found = [f for scope in scopes for f in scope.values()]
    return sorted(found, key=lambda f: f.id)
