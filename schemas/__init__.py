"""loopbus schemas: every event and report as a msgspec Struct, ids, subjects. No I/O."""

from schemas.envelope import ROLES, Actor, EventBase, Role
from schemas.errors import InvalidEvent, InvalidValue, SchemaError
from schemas.events import (
    EVENT_TYPES,
    KINDS,
    Event,
    decode_event,
    encode_event,
    event_to_builtins,
    project_subjects,
    subject_of,
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
from schemas.ids import Token, new_id, utcnow
from schemas.quarantine import MessageQuarantined
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

__all__ = [
    "BLOCK_REASONS",
    "EVENT_TYPES",
    "FINDING_CLASSES",
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
    "InvalidEvent",
    "InvalidValue",
    "MessageQuarantined",
    "Outcome",
    "Producer",
    "Role",
    "SchemaError",
    "Severity",
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
