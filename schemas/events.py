"""The one tagged union of every event kind and its codec.

To add a kind: define a Struct subclassing :class:`schemas.envelope.EventBase` with an
explicit versioned tag and a ``subject_suffix``, then add it to :data:`Event` below (the
list of classes and of kinds is derived from the union). Subjects live in
:mod:`schemas.subjects`.
"""

import re
from collections.abc import Iterator, Mapping
from typing import Any, get_args

import msgspec

from schemas import limits
from schemas.adoption import ConfigAdopt, ConfigAdopted
from schemas.charter import (
    CharterApprove,
    CharterApproved,
    CharterSubmission,
    RunCheckedIn,
    RunCriteriaChecked,
    RunCriteriaPinned,
    RunEnded,
    RunFinalizing,
    RunStop,
)
from schemas.contract import ConfigApprove, ConfigLanded, ConfigProposal, ContractLanded
from schemas.decisions import (
    BlockedRouted,
    DecisionChoice,
    DecisionRecorded,
    DecisionRequested,
    ObjectiveDeclared,
)
from schemas.errors import InvalidEvent
from schemas.findings import FindingRaised, FindingResolved
from schemas.gates import (
    GateResultRecorded,
    GateRunnerKeyRegistered,
    GateRunRequested,
    GateSuiteCompleted,
)
from schemas.leases import LeaseReleased, LeaseRenewed, LeaseTaken
from schemas.lessons import LessonsRecorded, SliceClosedOut
from schemas.lifecycle import FindingClaim, FindingDismissed, FindingReopened
from schemas.merges import (
    ApproveReport,
    CandidateTested,
    MergeConflicted,
    MergeQueued,
    MergeReverted,
    TrunkAdvanced,
    TrunkRecheck,
)
from schemas.planning import (
    PlanApprove,
    PlanAttemptRefused,
    PlanProposed,
    ReconRecorded,
    SkeletonApprove,
)
from schemas.quarantine import FoldQuarantined, MessageQuarantined
from schemas.ratchet import GateMoveClaim, GateMoved, GateProposed
from schemas.reports import (
    BlockedReport,
    CommitReport,
    GaveUpReport,
    StartedReport,
    UnblockedReport,
)
from schemas.reviews import (
    FindingSubtracted,
    InvestigationCompleted,
    InvestigationRequested,
    ReviewRequested,
    ReviewVerdict,
    RoundClosed,
    RoundUnchanged,
    RungPromoted,
    VerdictAccepted,
    VerdictRefused,
)
from schemas.ship import ShipCommandRan, SliceBundled, TrunkScanned
from schemas.slices import (
    MisalignmentRouted,
    PlanSubmission,
    RetryDecided,
    RunEntryCompleted,
    SliceClosed,
    SlicePlanAccepted,
    SlicePlanDiscarded,
    UnitDispatched,
    UsageReport,
)
from schemas.units import UnitPlanned, UnitTransitioned
from schemas.upcasters import UPCASTERS, Upcaster, upcast
from schemas.verify import SliceShipJudged, WaveVerified
from schemas.wave_review import UnitReReviewed, WaveReviewed

Event = (
    FindingRaised
    | FindingResolved
    | BlockedRouted
    | UnitPlanned
    | UnitTransitioned
    | MessageQuarantined
    | FoldQuarantined
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
    | RoundUnchanged
    | InvestigationRequested
    | InvestigationCompleted
    | PlanSubmission
    | SlicePlanAccepted
    | UnitDispatched
    | RunEntryCompleted
    | SliceClosed
    | LessonsRecorded
    | SliceClosedOut
    | MisalignmentRouted
    | SlicePlanDiscarded
    | RetryDecided
    | UsageReport
    | ApproveReport
    | MergeQueued
    | CandidateTested
    | TrunkAdvanced
    | MergeReverted
    | MergeConflicted
    | FindingClaim
    | FindingDismissed
    | FindingReopened
    | GateMoveClaim
    | GateMoved
    | GateProposed
    | DecisionRecorded
    | ObjectiveDeclared
    | TrunkRecheck
    | DecisionRequested
    | DecisionChoice
    | ConfigAdopted
    | ConfigAdopt
    | ReconRecorded
    | PlanProposed
    | PlanAttemptRefused
    | PlanApprove
    | SkeletonApprove
    | CharterSubmission
    | CharterApprove
    | RunStop
    | CharterApproved
    | RunCriteriaChecked
    | RunCheckedIn
    | RunCriteriaPinned
    | RunFinalizing
    | RunEnded
    | ContractLanded
    | ConfigProposal
    | ConfigApprove
    | ConfigLanded
    | WaveVerified
    | SliceShipJudged
    | WaveReviewed
    | UnitReReviewed
    | LeaseTaken
    | LeaseRenewed
    | LeaseReleased
    | TrunkScanned
    | SliceBundled
    | ShipCommandRan
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
    """JSON bytes as stored on the log.

    Raises :class:`InvalidEvent` naming the field when a text is not UTF-8: a lone
    surrogate, which is how Python hands on a byte of a file name, an argument or a
    variable that was not UTF-8 (the JSON encoder's own ``UnicodeEncodeError`` named
    nothing, and reached the user as a traceback)."""
    try:
        return _encoder.encode(event)
    except UnicodeEncodeError as exc:
        field, value = next(_not_text(msgspec.to_builtins(event), "$"), ("$", ""))
        raise InvalidEvent(
            limits.bounded(
                f"{event.kind}: {field} {value!r} is not UTF-8 text: give the text in UTF-8"
            ),
            field=field,
            value=value,
            kind=event.kind,
        ) from exc


def _not_text(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(path, text) of each string under ``value`` that cannot be encoded as UTF-8."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _not_text(key, f"{path} (a key)")
            yield from _not_text(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _not_text(item, f"{path}[{index}]")


def decode_event(data: bytes, upcasters: dict[str, Upcaster] | None = None) -> Event:
    """Decode stored bytes into an event, upcasting old shapes; unknown fields are ignored.

    Raises :class:`InvalidEvent` and nothing else, whatever the bytes hold: the reason names
    the field, the value found there (once, cut short) and the kind, and is at most
    ``limits.MAX_REASON_CHARS`` long. Besides the schema, decoding refuses a message over
    ``limits.MAX_EVENT_BYTES``, nested deeper than ``limits.MAX_DEPTH``, with a string
    longer than ``limits.MAX_TEXT_CHARS``, or with a time that has no UTC offset.
    """
    try:
        # Every reader decodes every message, so the common case costs two byte counts
        # and one msgspec call; the bounds and the upcasters run only when needed.
        size = len(data)
        if size > _EVENT_BYTES or data.count(b"{") + data.count(b"[") > _DEPTH:
            refused = limits.oversize(data)
            if refused is not None:
                raise InvalidEvent(refused)
        try:
            event: Event = _decoder.decode(data)
        except msgspec.ValidationError as exc:
            event = _upcast_or_refuse(data, exc, UPCASTERS if upcasters is None else upcasters)
        if size > _TEXT_CHARS:  # only then can one string be too long
            _check_text(event)
        return event
    except InvalidEvent:
        raise
    except msgspec.DecodeError as exc:
        raise InvalidEvent(limits.bounded(f"not a JSON event document: {exc}")) from exc
    except Exception as exc:  # RecursionError, MemoryError from a crafted message, a bug
        raise InvalidEvent(
            limits.bounded(f"the message could not be decoded: {type(exc).__name__}: {exc}")
        ) from exc


_EVENT_BYTES, _DEPTH, _TEXT_CHARS = limits.MAX_EVENT_BYTES, limits.MAX_DEPTH, limits.MAX_TEXT_CHARS


def _upcast_or_refuse(
    data: bytes, exc: msgspec.ValidationError, table: Mapping[str, Upcaster]
) -> Event:
    doc = _as_document(data)
    upcasted = upcast(doc, table) if doc is not None else None
    if upcasted is not None:
        try:
            converted: Event = msgspec.convert(upcasted, Event)
            return converted
        except msgspec.ValidationError as inner:
            raise _invalid(inner, upcasted) from inner
    raise _invalid(exc, doc) from exc


def _check_text(event: Event) -> None:
    # The decoded event, not the bytes: fields it ignores (unknown ones, the old shape an
    # upcaster rewrote) reach no reader, so only what it keeps is bounded.
    found = limits.long_text(msgspec.to_builtins(event))
    if found is not None:
        path, text = found
        field = limits.bounded(path.removeprefix("$."), limits.MAX_FIELD_CHARS)
        raise InvalidEvent(
            f"{event.kind}: field {field!r}: a string of {len(text)} characters, over the "
            f"{limits.MAX_TEXT_CHARS} character limit; cut it or reference an artefact",
            field=field,
            value=limits.shown(text),
            kind=event.kind,
        )


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
    """Turn msgspec's message into one that names the kind, the field and the value once."""
    text = str(exc)
    kind = doc.get("kind") if isinstance(doc, dict) else None
    kind_text = kind if isinstance(kind, str) and len(kind) <= limits.SHOWN_CHARS else None
    path = None
    if " - at `" in text:
        text, _, rest = text.partition(" - at `")
        path = rest.rstrip("`")
    if doc is None:
        return InvalidEvent(limits.bounded(f"event is not a JSON object: {text}"))
    if path == "$.kind" or (path is None and "kind" in text):
        return InvalidEvent(
            f"unknown event kind {limits.shown(kind)}; the {len(KINDS)} known kinds are "
            "schemas.KINDS, listed in docs/events.md",
            field="kind",
            value=_kept(kind),
            kind=kind_text,
        )
    value = _lookup(doc, path) if path else _MISSING
    field = limits.bounded(path.removeprefix("$."), limits.MAX_FIELD_CHARS) if path else None
    where = f"field {field!r}" if field else "event"
    if value is not _MISSING:
        text, named = _name_value_once(text, value)
        text += "" if named else f" (value {limits.shown(value)})"
    return InvalidEvent(
        limits.bounded(f"{kind_text or 'event'}: {where}: {text}"),
        field=field,
        value=None if value is _MISSING else _kept(value),
        kind=kind_text,
    )


def _name_value_once(text: str, value: Any) -> tuple[str, bool]:
    """msgspec puts some values in its message (``Invalid enum value 'x'``): show those
    cut short, in place, rather than a second time after the message."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        quoted = repr(value)
        if quoted in text:
            return text.replace(quoted, limits.shown(value)), True
    return limits.bounded(text, limits.SHOWN_CHARS), False


def _kept(value: Any) -> Any:
    """The value an error keeps: itself when small and flat, else how it is shown."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str) and len(value) <= limits.SHOWN_CHARS:
        return value
    return limits.shown(value)


_MISSING: Any = object()


def _lookup(doc: Any, path: str) -> Any:
    node = doc
    for name, index in _PATH_PART.findall(path.removeprefix("$")):
        try:
            node = node[name] if name else node[int(index)]
        except (KeyError, IndexError, TypeError):
            return _MISSING
    return node
