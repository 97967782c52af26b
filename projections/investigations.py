"""The ``investigations`` projection: failures counted per trigger, and what was investigated.

A *trigger* is one thing that can fail repeatedly; its second failure dispatches exactly
one investigation. Three kinds:

* ``unit-failed:<unit>`` — a unit's failing round (a red gate suite or a rejected review,
  ``RoundClosed`` with ``passed = false``) or a terminal failure (FAILED or LOST). A
  terminal transition caused by a round already counted is the same failure, not another;
* ``trunk-red:<interface>`` — a red trunk: the merger's ``trunk-red`` finding, or its
  ``contract-wrong`` promotion for a red again (``evidence["why"] == "red-again"``). The
  interface is ``evidence["interface"]`` (the failing tests), else the finding's criterion
  or target; a red whose interface shares a test with an earlier red's counts against
  that earlier trigger, as the merger's own "same interface" rule does;
* ``gate-error:<check>:<signature>`` — a gate result with outcome ``error``; the signature
  is a digest of the error text with numbers, hex ids and temporary paths blanked, so the
  same failure on another commit or after another duration has the same signature.

Pure: no I/O, no clock.
"""

import hashlib
import re
from typing import Any

import msgspec

from projections.base import Fold
from schemas import Event, FindingRaised, UnitTransitioned, format_target
from schemas.gates import GateResultRecorded
from schemas.reviews import (
    InvestigationCompleted,
    InvestigationRequested,
    RoundClosed,
    TriggerKind,
)

THRESHOLD = 2
"""The failure that dispatches the investigation: the second."""


class TriggerView(msgspec.Struct, kw_only=True):
    trigger: str
    kind: TriggerKind
    key: str
    unit: str | None = None
    interface: list[str] = []
    """For trunk reds: the failing tests this trigger is about."""
    failures: list[str] = []
    """Ids of the failure events, in log order (kept whole until requested)."""
    evidence: list[dict[str, Any]] = []
    requested: str | None = None
    completed: str | None = None
    finding: str | None = None


class InvestigationsState(msgspec.Struct):
    triggers: dict[str, TriggerView] = {}


def initial() -> InvestigationsState:
    return InvestigationsState()


def trigger_key(trigger: str) -> str:
    """A subject token for a trigger: one trigger, one subject."""
    return hashlib.sha256(trigger.encode()).hexdigest()[:32]


_NUMBERS = re.compile(r"\d+(?:\.\d+)?")
_HEX = re.compile(r"\b[0-9a-f]{7,64}\b")
_TMP = re.compile(r"(/tmp|/var/folders|/private/var)/\S*")


def error_signature(check: str, error: str) -> str:
    """``<check>:<digest>`` of the error text with volatile parts blanked."""
    text = _TMP.sub("<tmp>", error)
    text = _HEX.sub("<id>", text)
    text = _NUMBERS.sub("#", text)
    return f"{check}:{hashlib.sha256(text.strip().encode()).hexdigest()[:16]}"


def apply(state: InvestigationsState, event: Event) -> InvestigationsState:
    match event:
        case RoundClosed(passed=False):
            _fail(
                state,
                f"unit-failed:{event.unit}",
                "unit-failed",
                event.id,
                event.unit,
                {
                    "event": event.id,
                    "what": f"round {event.round} ({event.source}) failed",
                    "head": event.head,
                    "failing_checks": list(event.failing_checks),
                    "finding_keys": list(event.finding_keys),
                    "convergence": event.convergence,
                    "action": event.action,
                    "why": event.why,
                },
            )
        case UnitTransitioned(state="failed" | "lost", outcome=outcome):
            trigger = f"unit-failed:{event.unit}"
            view = state.triggers.get(trigger)
            if view is not None and event.cause is not None and event.cause in view.failures:
                return state  # the round that caused it was counted already
            _fail(
                state,
                trigger,
                "unit-failed",
                event.id,
                event.unit,
                {
                    "event": event.id,
                    "what": f"unit {event.state}",
                    "ended_by": outcome.ended_by if outcome is not None else "",
                    "summary": outcome.summary if outcome is not None else "",
                    "runner": event.state == "lost",
                },
            )
        case FindingRaised(producer="trunk_gate") if _is_trunk_red(event):
            interface = _interface(event)
            trigger = _trunk_trigger(state, interface)
            _fail(
                state,
                trigger,
                "trunk-red",
                event.id,
                event.unit,
                {
                    "event": event.id,
                    "what": "trunk went red",
                    "interface": interface,
                    "target": format_target(event.target),
                    "message": event.message,
                    "evidence": dict(event.evidence),
                },
            )
            state.triggers[trigger].interface = sorted(
                set(state.triggers[trigger].interface) | set(interface)
            )
        case GateResultRecorded(outcome="error"):
            _fail(
                state,
                f"gate-error:{error_signature(event.check, event.error)}",
                "gate-error",
                event.id,
                None,
                {
                    "event": event.id,
                    "what": f"gate {event.check} errored",
                    "error": event.error,
                    "commit": event.commit,
                    "tree": event.tree,
                },
            )
        case InvestigationRequested():
            view = state.triggers.get(event.trigger)
            if view is None:
                view = state.triggers[event.trigger] = TriggerView(
                    trigger=event.trigger, kind=event.trigger_kind, key=event.key
                )
            if view.requested is None:
                view.requested = event.id
        case InvestigationCompleted():
            view = state.triggers.get(event.trigger)
            if view is not None and view.completed is None:
                view.completed = event.id
                view.finding = event.finding
        case _:
            pass
    return state


def _is_trunk_red(event: FindingRaised) -> bool:
    if event.cls == "trunk-red":
        return True
    return event.cls == "contract-wrong" and event.evidence.get("why") == "red-again"


def _interface(event: FindingRaised) -> list[str]:
    interface = event.evidence.get("interface")
    if isinstance(interface, list) and interface:
        return sorted({str(test) for test in interface})
    if isinstance(interface, str) and interface:
        return [interface]
    return [event.criterion or format_target(event.target)]


def _trunk_trigger(state: InvestigationsState, interface: list[str]) -> str:
    """The earliest trunk-red trigger sharing a test with ``interface``, else a new one."""
    for view in state.triggers.values():
        if view.kind == "trunk-red" and set(view.interface) & set(interface):
            return view.trigger
    return "trunk-red:" + ",".join(interface)


def _fail(
    state: InvestigationsState,
    trigger: str,
    kind: TriggerKind,
    event_id: str,
    unit: str | None,
    evidence: dict[str, Any],
) -> None:
    view = state.triggers.get(trigger)
    if view is None:
        view = state.triggers[trigger] = TriggerView(
            trigger=trigger, kind=kind, key=trigger_key(trigger), unit=unit
        )
    if view.requested is not None or len(view.failures) >= THRESHOLD:
        return  # one investigation per trigger: later failures add nothing to dispatch
    view.failures.append(event_id)
    view.evidence.append(evidence)


FOLD = Fold(name="investigations", state_type=InvestigationsState, initial=initial, apply=apply)


# -- queries ----------------------------------------------------------------------------


def due(state: InvestigationsState) -> list[TriggerView]:
    """Triggers at their second failure with no investigation requested yet."""
    return [
        v for v in state.triggers.values() if v.requested is None and len(v.failures) >= THRESHOLD
    ]


def running(state: InvestigationsState) -> list[TriggerView]:
    """Requested investigations with no completion on the log (a restart finishes them)."""
    return [v for v in state.triggers.values() if v.requested is not None and v.completed is None]
