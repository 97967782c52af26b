"""Every finding a project has had, open or closed: the fold behind ``findings export``.

It is the ``findings`` projection (:mod:`projections.findings`, the same fold the
projector and ``replay`` run, so "open" means exactly what ``status`` says) plus a memory of
the findings that stopped being open and why. The projection forgets a finding once it is
resolved; an export with ``--all`` needs it, with the reason, to write it as a suppressed
result.

One entry per finding key (target, severity, criterion): the key is what makes two raises
"the same finding" for convergence, and it is what the export fingerprints, so the same key
open in two units is one result naming both units.

A dismissal (``loopbus finding dismiss``, turned into a :class:`FindingDismissed` fact by
the lifecycle daemon) closes a finding with a reason, like a resolution, and is recorded
with ``status="dismissed"``; a reopened finding is open again and its closure is dropped.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec

from projections import findings
from projections.findings import PROJECT_SCOPE, FindingsState, OpenFinding
from schemas import SEVERITIES, Event, FindingResolved
from schemas.lifecycle import FindingDismissed, FindingReopened

Status = Literal["open", "resolved", "dismissed"]


class Closure(msgspec.Struct, kw_only=True):
    """Why and when a finding stopped being open, and who closed it."""

    status: Status
    why: str
    at: datetime
    by: str
    finding: OpenFinding
    units: list[str]


class FindingsLedger(msgspec.Struct):
    """The open findings (the projection's own state) and the last closure of each key."""

    current: FindingsState = msgspec.field(default_factory=findings.initial)
    closed: dict[str, Closure] = {}


class Entry(msgspec.Struct, kw_only=True, frozen=True):
    """One finding key as the export sees it."""

    key: str
    finding: OpenFinding
    units: tuple[str, ...]
    status: Status
    times: int
    why: str = ""
    closed_by: str = ""


def initial() -> FindingsLedger:
    return FindingsLedger()


def apply(ledger: FindingsLedger, event: Event) -> FindingsLedger:
    """Fold one event: the projection's own fold, plus the closure a resolution records."""
    match event:
        case FindingResolved():
            _close(ledger, event.finding, "resolved", event.why, event.at, event.actor.principal)
        case FindingDismissed():
            why = f"{event.reason}: {event.why}"
            _close(ledger, event.finding, "dismissed", why, event.at, event.by)
        case FindingReopened():
            for key, closure in list(ledger.closed.items()):
                if closure.finding.id == event.finding:
                    del ledger.closed[key]
    findings.apply(ledger.current, event)
    return ledger


def _close(
    ledger: FindingsLedger, finding_id: str, status: Status, why: str, at: datetime, by: str
) -> None:
    for scope, found in ledger.current.open.items():
        for key, finding in found.items():
            if finding.id == finding_id:
                units = [] if scope == PROJECT_SCOPE else [scope]
                ledger.closed[key] = Closure(
                    status=status, why=why, at=at, by=by, finding=finding, units=units
                )


def entries(ledger: FindingsLedger, *, closed: bool = False) -> list[Entry]:
    """The open findings, one per key (and with ``closed``, the keys no longer open), worst
    severity first, then by key: the same log always gives the same order."""
    grouped: dict[str, list[tuple[str, OpenFinding]]] = {}
    for scope, found in ledger.current.open.items():
        for key, finding in found.items():
            grouped.setdefault(key, []).append((scope, finding))
    result = [_open_entry(key, raised) for key, raised in grouped.items()]
    if closed:
        result += [
            Entry(
                key=key,
                finding=closure.finding,
                units=tuple(closure.units),
                status=closure.status,
                times=closure.finding.times,
                why=closure.why,
                closed_by=closure.by,
            )
            for key, closure in ledger.closed.items()
            if key not in grouped
        ]
    return sorted(result, key=lambda e: (-SEVERITIES.index(e.finding.severity), e.key))


def _open_entry(key: str, raised: list[tuple[str, OpenFinding]]) -> Entry:
    first = min((finding for _, finding in raised), key=lambda f: (f.raised_at, f.id))
    units = tuple(sorted(scope for scope, _ in raised if scope != PROJECT_SCOPE))
    return Entry(
        key=key,
        finding=first,
        units=units,
        status="open",
        times=sum(finding.times for _, finding in raised),
    )


def suppression(entry: Entry) -> dict[str, Any] | None:
    """The SARIF ``suppression`` of a finding that is no longer open; ``None`` while open.

    A closed finding was judged, by the system or a person, to need no more attention:
    SARIF's meaning of an accepted suppression. It is external (recorded on the log, not in
    the source), and its justification says how it was closed, by whom and why.
    """
    if entry.status == "open":
        return None
    return {
        "kind": "external",
        "status": "accepted",
        "justification": f"{entry.status} by {entry.closed_by}: {entry.why}",
    }
