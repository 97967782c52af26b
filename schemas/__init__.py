"""loopbus schemas: every event and report as a msgspec Struct, ids, subjects. No I/O.

No module here uses ``from __future__ import annotations``: msgspec reads every Struct's
annotations when it builds a decoder, and as strings each is compiled and evaluated
(some 1,100 for the union of events, a fifth of a command's start-up). A name defined
further down is written in quotes.
"""

from typing import TYPE_CHECKING

from schemas.lazy import lazy_exports

# The names are loaded on first use (PEP 562), not when the package is imported: importing
# ``schemas.ids`` or ``schemas.findings`` (a command's options, its
# completion words) does not build every event Struct and the decoder of their union;
# ``from schemas import Event`` still works and loads ``schemas.events``.
if TYPE_CHECKING:
    from schemas.envelope import ROLES, Actor, EventBase, Role
    from schemas.errors import InvalidEvent, InvalidValue, SchemaError
    from schemas.events import (
        EVENT_TYPES,
        KINDS,
        Event,
        decode_event,
        encode_event,
        event_to_builtins,
    )
    from schemas.findings import (
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
    from schemas.gates import (
        GATE_OUTCOMES,
        GateOutcome,
        GateResultRecorded,
        GateRunnerKeyRegistered,
        GateRunRequested,
        GateSuiteCompleted,
        SuiteEntry,
    )
    from schemas.ids import Token, new_id, utcnow
    from schemas.quarantine import FoldQuarantined, MessageQuarantined
    from schemas.subjects import project_subjects, subject_of
    from schemas.targets import Target, format_target, parse_target
    from schemas.units import (
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
    "Actor": "schemas.envelope",
    "BLOCK_REASONS": "schemas.units",
    "Block": "schemas.units",
    "BlockReason": "schemas.units",
    "EVENT_TYPES": "schemas.events",
    "Event": "schemas.events",
    "EventBase": "schemas.envelope",
    "FINDING_CLASSES": "schemas.findings",
    "FindingClass": "schemas.findings",
    "FindingKey": "schemas.findings",
    "FindingRaised": "schemas.findings",
    "FindingResolved": "schemas.findings",
    "FoldQuarantined": "schemas.quarantine",
    "GATE_OUTCOMES": "schemas.gates",
    "GateOutcome": "schemas.gates",
    "GateResultRecorded": "schemas.gates",
    "GateRunRequested": "schemas.gates",
    "GateRunnerKeyRegistered": "schemas.gates",
    "GateSuiteCompleted": "schemas.gates",
    "InvalidEvent": "schemas.errors",
    "InvalidValue": "schemas.errors",
    "KINDS": "schemas.events",
    "MessageQuarantined": "schemas.quarantine",
    "Outcome": "schemas.units",
    "PRODUCERS": "schemas.findings",
    "Producer": "schemas.findings",
    "ROLES": "schemas.envelope",
    "Role": "schemas.envelope",
    "SEVERITIES": "schemas.findings",
    "SchemaError": "schemas.errors",
    "Severity": "schemas.findings",
    "SuiteEntry": "schemas.gates",
    "TERMINAL_STATES": "schemas.units",
    "Target": "schemas.targets",
    "Token": "schemas.ids",
    "UNIT_STATES": "schemas.units",
    "UnitPlanned": "schemas.units",
    "UnitState": "schemas.units",
    "UnitTransitioned": "schemas.units",
    "decode_event": "schemas.events",
    "encode_event": "schemas.events",
    "event_to_builtins": "schemas.events",
    "finding_key": "schemas.findings",
    "format_target": "schemas.targets",
    "new_id": "schemas.ids",
    "parse_target": "schemas.targets",
    "project_subjects": "schemas.subjects",
    "subject_of": "schemas.subjects",
    "utcnow": "schemas.ids",
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


__getattr__ = lazy_exports(__name__, _HOME, globals())
