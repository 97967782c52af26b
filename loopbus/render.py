"""How events and projection states look to a person (and as JSON to a program)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TextIO

from loopbus import slice_render
from loopbus.bus import Record
from loopbus.merges_status import render_merges
from loopbus.projections import convergence as convergence_fold
from loopbus.projections import findings as findings_fold
from loopbus.projections import gates as gates_fold
from loopbus.projections import investigations as investigations_fold
from loopbus.projections import reviews as reviews_fold
from loopbus.projections import to_builtins
from loopbus.schemas import FindingRaised, MessageQuarantined, event_to_builtins, format_target
from loopbus.schemas.subjects import parse_subject
from loopbus.units_status import render_units

_RESET = "\x1b[0m"
_COLOURS = {
    "critical": "\x1b[1;31m",
    "high": "\x1b[31m",
    "medium": "\x1b[33m",
    "low": "\x1b[36m",
    "info": "\x1b[2m",
    "kind": "\x1b[1m",
    "dim": "\x1b[2m",
    "error": "\x1b[1;35m",
    "project": "\x1b[34m",
}


class Palette:
    """ANSI colour when writing to a terminal, plain text otherwise."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    @classmethod
    def for_stream(cls, stream: TextIO = sys.stdout) -> Palette:
        return cls(bool(getattr(stream, "isatty", lambda: False)()))

    def __call__(self, style: str, text: str) -> str:
        if not self.enabled or style not in _COLOURS:
            return text
        return f"{_COLOURS[style]}{text}{_RESET}"


def record_json(record: Record) -> dict[str, Any]:
    """One record as ``tail --json`` prints it: seq, subject, time, kind and the event's fields."""
    head: dict[str, Any] = {
        "seq": record.seq,
        "subject": record.subject,
        "time": record.time.isoformat() if record.time else None,
    }
    if record.event is None:
        head["kind"] = None
        head["error"] = str(record.error)
        return head
    return head | event_to_builtins(record.event)


def record_line(record: Record, paint: Palette, show_project: bool = False) -> str:
    """One record as one readable line; ``show_project`` names its project after the time
    (``tail`` does when it follows more than one project)."""
    when = (record.time or datetime.now(UTC)).astimezone(UTC).strftime("%H:%M:%S")
    prefix = f"{paint('dim', f'#{record.seq:<6}')} {when}"
    event = record.event
    if show_project:
        parsed = parse_subject(record.subject)
        project = event.project if event is not None else parsed.project if parsed else "?"
        prefix = f"{prefix} {paint('project', project)}"
    if event is None:
        return f"{prefix} {paint('error', 'undecodable')} {record.subject}: {record.error}"
    kind = paint("kind", event.kind.removesuffix(f".v{event.v}"))
    match event:
        case FindingRaised():
            scope = f" unit={event.unit}" if event.unit else ""
            criterion = f" [{event.criterion}]" if event.criterion else ""
            return (
                f"{prefix} {kind} {paint(event.severity, event.severity)} {event.producer}"
                f" {event.cls} {format_target(event.target)}{criterion}{scope}: {event.message}"
            )
        case MessageQuarantined():
            return (
                f"{prefix} {kind} seq {event.original_seq} on {event.original_subject}: "
                f"{event.reason}"
            )
    return f"{prefix} {kind} {_summary(event_to_builtins(event))}"


_ENVELOPE = {"kind", "project", "actor", "id", "at", "v"}


def _summary(fields: dict[str, Any]) -> str:
    parts = []
    for name, value in fields.items():
        if name in _ENVELOPE or value in (None, [], {}, ""):
            continue
        if isinstance(value, dict):
            value = ",".join(f"{k}={v}" for k, v in value.items() if v not in (None, ""))
        elif isinstance(value, list):
            value = ",".join(str(v) for v in value)
        parts.append(f"{name}={value}")
    return " ".join(parts)


# -- projection states ------------------------------------------------------------------

StateRenderer = Callable[[Any], list[str]]


def render_findings(state: findings_fold.FindingsState) -> list[str]:
    open_findings = findings_fold.open_findings(state)
    lines = [f"open findings: {len(open_findings)} (resolved: {state.resolved})"]
    for f in open_findings:
        scope = f.unit or "project"
        seen = f" x{f.times}" if f.times > 1 else ""
        criterion = f" [{f.criterion}]" if f.criterion else ""
        lines.append(
            f"  {scope}: {f.severity} {f.producer} {f.cls} {f.target}{criterion}{seen}: {f.message}"
        )
    return lines


def render_gates(state: gates_fold.GatesState) -> list[str]:
    lines = [
        f"gates: {state.results} results recorded ({state.errors} errors), "
        f"{len(state.cache)} cached, {len(state.keys)} runner keys, "
        f"{len(state.refused)} results refused"
    ]
    lines += [f"  refused {key}: {refusal}" for key, refusal in list(state.refused.items())[:5]]
    return lines


def render_convergence(state: convergence_fold.ConvergenceState) -> list[str]:
    if not state.units:
        return ["convergence: no rounds yet"]
    lines = [f"convergence: {len(state.units)} units with rounds"]
    for unit, view in state.units.items():
        last = view.rounds[-1] if view.rounds else None
        verdict = f"round {last.round} {last.convergence}" if last else "no round closed"
        ended = f", ended by {last.ended_by}" if last and last.ended_by else ""
        lines.append(f"  {unit}: {verdict}{ended}; rung {view.rung} ({view.tactic})")
    return lines


def render_reviews(state: reviews_fold.ReviewsState) -> list[str]:
    requests = list(state.requests.values())
    lines = [
        f"reviews: {len(requests)} requested, {len(state.open)} open, "
        f"{sum(state.rounds.values())} rounds closed"
    ]
    for unit, request_id in sorted(state.open.items()):
        request = state.requests[request_id]
        lines.append(
            f"  {unit}: round {request.round} with {request.reviewer} on {request.head[:12]}"
        )
    return lines


def render_investigations(state: investigations_fold.InvestigationsState) -> list[str]:
    triggers = list(state.triggers.values())
    done = sum(1 for t in triggers if t.completed)
    lines = [f"investigations: {len(triggers)} triggers, {done} investigated"]
    for view in triggers:
        if view.requested and not view.completed:
            where = f" ({view.unit})" if view.unit else ""
            lines.append(f"  open: {view.kind}{where} after {len(view.failures)} failures")
    return lines


def render_builds(state: Any) -> list[str]:
    """Units owing a builder round, and decisions waiting on the operator."""
    owing = [u for u, b in state.units.items() if b.owes_round()]
    waiting = [f"{u}:{d}" for u, b in state.units.items() for d in b.awaiting]
    recorded = sum(len(b.decisions) for b in state.units.values())
    return [
        f"builds: {len(state.units)} units dispatched, {len(owing)} owing a round"
        + (f" ({', '.join(owing)})" if owing else ""),
        f"  decisions: {recorded} recorded, {len(waiting)} waiting on the operator"
        + (f" ({', '.join(waiting)})" if waiting else ""),
    ]


RENDERERS: dict[str, StateRenderer] = {
    "units": render_units,
    "findings": render_findings,
    "slices": slice_render.render_slices,
    "budgets": slice_render.render_budgets,
    "merges": render_merges,
    "gates": render_gates,
    "convergence": render_convergence,
    "reviews": render_reviews,
    "investigations": render_investigations,
    "builds": render_builds,
}
"""projection name -> renderer; a projection without one is shown as JSON."""


def render_state(name: str, state: Any) -> list[str]:
    renderer = RENDERERS.get(name)
    if renderer is not None:
        return renderer(state)
    import json

    body = json.dumps(to_builtins(state), indent=2, default=str)
    return [f"{name}:"] + ["  " + line for line in body.splitlines()]
