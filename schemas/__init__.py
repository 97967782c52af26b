"""loopbus schemas: every event and report as a msgspec Struct, ids, subjects. No I/O."""

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
from loopbus.schemas.quarantine import MessageQuarantined
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
