"""loopbus schemas: every event and report as a msgspec Struct, ids, subjects. No I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# The names are loaded on first use (PEP 562), not when the package is imported: importing
# ``loopbus.schemas.ids`` or ``loopbus.schemas.findings`` (a command's options, its
# completion words) does not build every event Struct and the decoder of their union;
# ``from loopbus.schemas import Event`` still works and loads ``loopbus.schemas.events``.
if TYPE_CHECKING:
    from loopbus.schemas.envelope import ROLES, Actor, EventBase, Role
    from loopbus.schemas.errors import InvalidEvent, InvalidValue, SchemaError
    from loopbus.schemas.events import (
        EVENT_TYPES,
        KINDS,
        Event,
        decode_event,
        encode_event,
        event_to_builtins,
    )
    from loopbus.schemas.findings import (
        FINDING_CLASSES,
        PRODUCERS,
        SEVERITIES,
        FindingClass,
        FindingKey,
        FindingRaised,
        FindingResolved,
        Producer,
        Severity,
        finding_key,
    )
    from loopbus.schemas.gates import (
        GATE_OUTCOMES,
        GateOutcome,
        GateResultRecorded,
        GateRunnerKeyRegistered,
        GateRunRequested,
        GateSuiteCompleted,
        SuiteEntry,
    )
    from loopbus.schemas.ids import Token, new_id, utcnow
    from loopbus.schemas.quarantine import FoldQuarantined, MessageQuarantined
    from loopbus.schemas.subjects import project_subjects, subject_of
    from loopbus.schemas.targets import Target, format_target, parse_target
    from loopbus.schemas.units import (
        BLOCK_REASONS,
        TERMINAL_STATES,
        UNIT_STATES,
        Block,
        BlockReason,
        Outcome,
        UnitPlanned,
        UnitState,
        UnitTransitioned,
    )

_HOME: dict[str, str] = {
    "Actor": "loopbus.schemas.envelope",
    "BLOCK_REASONS": "loopbus.schemas.units",
    "Block": "loopbus.schemas.units",
    "BlockReason": "loopbus.schemas.units",
    "EVENT_TYPES": "loopbus.schemas.events",
    "Event": "loopbus.schemas.events",
    "EventBase": "loopbus.schemas.envelope",
    "FINDING_CLASSES": "loopbus.schemas.findings",
    "FindingClass": "loopbus.schemas.findings",
    "FindingKey": "loopbus.schemas.findings",
    "FindingRaised": "loopbus.schemas.findings",
    "FindingResolved": "loopbus.schemas.findings",
    "FoldQuarantined": "loopbus.schemas.quarantine",
    "GATE_OUTCOMES": "loopbus.schemas.gates",
    "GateOutcome": "loopbus.schemas.gates",
    "GateResultRecorded": "loopbus.schemas.gates",
    "GateRunRequested": "loopbus.schemas.gates",
    "GateRunnerKeyRegistered": "loopbus.schemas.gates",
    "GateSuiteCompleted": "loopbus.schemas.gates",
    "InvalidEvent": "loopbus.schemas.errors",
    "InvalidValue": "loopbus.schemas.errors",
    "KINDS": "loopbus.schemas.events",
    "MessageQuarantined": "loopbus.schemas.quarantine",
    "Outcome": "loopbus.schemas.units",
    "PRODUCERS": "loopbus.schemas.findings",
    "Producer": "loopbus.schemas.findings",
    "ROLES": "loopbus.schemas.envelope",
    "Role": "loopbus.schemas.envelope",
    "SEVERITIES": "loopbus.schemas.findings",
    "SchemaError": "loopbus.schemas.errors",
    "Severity": "loopbus.schemas.findings",
    "SuiteEntry": "loopbus.schemas.gates",
    "TERMINAL_STATES": "loopbus.schemas.units",
    "Target": "loopbus.schemas.targets",
    "Token": "loopbus.schemas.ids",
    "UNIT_STATES": "loopbus.schemas.units",
    "UnitPlanned": "loopbus.schemas.units",
    "UnitState": "loopbus.schemas.units",
    "UnitTransitioned": "loopbus.schemas.units",
    "decode_event": "loopbus.schemas.events",
    "encode_event": "loopbus.schemas.events",
    "event_to_builtins": "loopbus.schemas.events",
    "finding_key": "loopbus.schemas.findings",
    "format_target": "loopbus.schemas.targets",
    "new_id": "loopbus.schemas.ids",
    "parse_target": "loopbus.schemas.targets",
    "project_subjects": "loopbus.schemas.subjects",
    "subject_of": "loopbus.schemas.subjects",
    "utcnow": "loopbus.schemas.ids",
}
"""Where each exported name lives."""

__all__ = [
    "BLOCK_REASONS",
    "EVENT_TYPES",
    "FINDING_CLASSES",
    "GATE_OUTCOMES",
    "KINDS",
    "PRODUCERS",
    "ROLES",
    "SEVERITIES",
    "TERMINAL_STATES",
    "UNIT_STATES",
    "Actor",
    "Block",
    "BlockReason",
    "Event",
    "EventBase",
    "FindingClass",
    "FindingKey",
    "FindingRaised",
    "FindingResolved",
    "FoldQuarantined",
    "GateOutcome",
    "GateResultRecorded",
    "GateRunRequested",
    "GateRunnerKeyRegistered",
    "GateSuiteCompleted",
    "InvalidEvent",
    "InvalidValue",
    "MessageQuarantined",
    "Outcome",
    "Producer",
    "Role",
    "SchemaError",
    "Severity",
    "SuiteEntry",
    "Target",
    "Token",
    "UnitPlanned",
    "UnitState",
    "UnitTransitioned",
    "decode_event",
    "encode_event",
    "event_to_builtins",
    "finding_key",
    "format_target",
    "new_id",
    "parse_target",
    "project_subjects",
    "subject_of",
    "utcnow",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # __import__, not importlib.import_module: `python -X importtime` times only imports
    # that go through it, and it is how a slow start is found.
    value = getattr(__import__(home, fromlist=[name]), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value
