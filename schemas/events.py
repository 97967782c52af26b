"""The one tagged union of every event kind and its codec.

To add a kind: define a Struct subclassing :class:`loopbus.schemas.envelope.EventBase` with an
explicit versioned tag and a ``subject_suffix``, then add it to :data:`Event` below (the
list of classes and of kinds is derived from the union). Subjects live in
:mod:`loopbus.schemas.subjects`.
"""

from __future__ import annotations

import re
from typing import Any, get_args

import msgspec
from loopbus.schemas.errors import InvalidEvent
from loopbus.schemas.findings import FindingRaised, FindingResolved
from loopbus.schemas.gates import (
    GateResultRecorded,
    GateRunnerKeyRegistered,
    GateRunRequested,
    GateSuiteCompleted,
)
from loopbus.schemas.merges import (
    ApproveReport,
    CandidateTested,
    MergeConflicted,
    MergeQueued,
    MergeReverted,
    TrunkAdvanced,
)
from loopbus.schemas.quarantine import MessageQuarantined
from loopbus.schemas.reports import (
    BlockedReport,
    CommitReport,
    GaveUpReport,
    StartedReport,
    UnblockedReport,
)
from loopbus.schemas.reviews import (
    FindingSubtracted,
    InvestigationCompleted,
    InvestigationRequested,
    ReviewRequested,
    ReviewVerdict,
    RoundClosed,
    RungPromoted,
    VerdictAccepted,
    VerdictRefused,
)
from loopbus.schemas.slices import (
    MisalignmentRouted,
    PlanSubmission,
    RunEntryCompleted,
    SliceClosed,
    SlicePlanAccepted,
    SlicePlanDiscarded,
    UnitDispatched,
    UsageReport,
)
from loopbus.schemas.units import UnitPlanned, UnitTransitioned
from loopbus.schemas.upcasters import UPCASTERS, Upcaster, upcast

Event = (
    FindingRaised
    | FindingResolved
    | UnitPlanned
    | UnitTransitioned
    | MessageQuarantined
    | StartedReport
    | BlockedReport
    | UnblockedReport
    | CommitReport
    | GaveUpReport
    | GateRunnerKeyRegistered
    | GateResultRecorded
    | GateSuiteCompleted
    | GateRunRequested
    | ReviewRequested
    | ReviewVerdict
    | VerdictAccepted
    | VerdictRefused
    | FindingSubtracted
    | RoundClosed
    | RungPromoted
    | InvestigationRequested
    | InvestigationCompleted
    | PlanSubmission
    | SlicePlanAccepted
    | UnitDispatched
    | RunEntryCompleted
    | SliceClosed
    | MisalignmentRouted
    | SlicePlanDiscarded
    | UsageReport
    | ApproveReport
    | MergeQueued
    | CandidateTested
    | TrunkAdvanced
    | MergeReverted
    | MergeConflicted
)
"""Every kind that may appear on the log."""

EVENT_TYPES: tuple[type[Any], ...] = get_args(Event)
"""The same kinds as classes, in the union's order (derived, so there is one list)."""

KINDS: tuple[str, ...] = tuple(str(t.__struct_config__.tag) for t in EVENT_TYPES)

_encoder = msgspec.json.Encoder()
_decoder: msgspec.json.Decoder[Event] = msgspec.json.Decoder(Event)
_generic = msgspec.json.Decoder()
_PATH_PART = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")


def encode_event(event: Event) -> bytes:
    """JSON bytes as stored on the log."""
    return _encoder.encode(event)


def decode_event(data: bytes, upcasters: dict[str, Upcaster] | None = None) -> Event:
    """Decode stored bytes into an event, upcasting old shapes; unknown fields are ignored.

    Raises :class:`InvalidEvent` naming the field, the value found there and the kind.
    """
    try:
        return _decoder.decode(data)
    except msgspec.ValidationError as exc:
        doc = _as_document(data)
        table = UPCASTERS if upcasters is None else upcasters
        upcasted = upcast(doc, table) if doc is not None else None
        if upcasted is not None:
            try:
                converted: Event = msgspec.convert(upcasted, Event)
                return converted
            except msgspec.ValidationError as inner:
                raise _invalid(inner, upcasted) from inner
        raise _invalid(exc, doc) from exc
    except msgspec.DecodeError as exc:
        raise InvalidEvent(f"not a JSON event document: {exc}") from exc


def event_to_builtins(event: Event) -> dict[str, Any]:
    """The event as plain JSON-ready data (``kind`` first), for ``--json`` output."""
    out: dict[str, Any] = msgspec.to_builtins(event)
    return out


def _as_document(data: bytes) -> dict[str, Any] | None:
    try:
        doc = _generic.decode(data)
    except msgspec.DecodeError:
        return None
    return doc if isinstance(doc, dict) else None


def _invalid(exc: msgspec.ValidationError, doc: dict[str, Any] | None) -> InvalidEvent:
    """Turn msgspec's message into one that names the kind, the field and the value."""
    text = str(exc)
    kind = doc.get("kind") if isinstance(doc, dict) else None
    path = None
    if " - at `" in text:
        text, _, rest = text.partition(" - at `")
        path = rest.rstrip("`")
    if doc is None:
        return InvalidEvent(f"event is not a JSON object: {text}")
    if path == "$.kind" or (path is None and "kind" in text):
        return InvalidEvent(
            f"unknown event kind {kind!r}; known kinds: {', '.join(KINDS)}",
            field="kind",
            value=kind,
            kind=str(kind) if kind is not None else None,
        )
    value = _lookup(doc, path) if path else None
    field = path.removeprefix("$.") if path else None
    where = f"field {field!r}" if field else "event"
    shown = f" (value {value!r})" if value is not _MISSING else ""
    return InvalidEvent(
        f"{kind or 'event'}: {where}: {text}{shown}",
        field=field,
        value=None if value is _MISSING else value,
        kind=str(kind) if kind is not None else None,
    )


_MISSING: Any = object()


def _lookup(doc: Any, path: str) -> Any:
    node = doc
    for name, index in _PATH_PART.findall(path.removeprefix("$")):
        try:
            node = node[name] if name else node[int(index)]
        except (KeyError, IndexError, TypeError):
            return _MISSING
    return node
