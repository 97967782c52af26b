"""Structure-aware fuzzing of the decoder: whatever the bytes, an event or an InvalidEvent.

Valid events of several kinds are mutated where it hurts: a field replaced by a value of
another type, a huge string, a naive or shifted time, deep nesting, an unknown kind, a
field removed, a key added; next to them raw bytes, truncations and messages over 1 MB.
Each must decode into an event that round-trips, or raise InvalidEvent with a bounded
reason from which a small, publishable quarantine record is built. Any other exception
(RecursionError, TypeError, MemoryError …) fails the test.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas import (
    Actor,
    Block,
    Event,
    FindingRaised,
    InvalidEvent,
    Outcome,
    UnitPlanned,
    UnitTransitioned,
    decode_event,
    encode_event,
    limits,
    parse_target,
)
from schemas.quarantine import quarantine_record
from schemas.reports import BlockedReport, StartedReport

SYSTEM = Actor(role="system", principal="fuzz")
BUILDER = Actor(role="builder", principal="b1")
DEEP = "\x00deep\x00"  # a placeholder string swapped for raw nested brackets after encoding


def seeds() -> list[Event]:
    """One valid event of each shape worth mutating: nested structs, lists, free-form maps."""
    return [
        FindingRaised(
            project="demo",
            actor=BUILDER,
            producer="builder",
            target=parse_target("code:src/app.py:3-9"),
            severity="medium",
            criterion="C1",
            message="the value may be None",
            evidence={"rule": "none-check", "lines": [3, 4], "ctx": {"a": None}},
            unit="U1",
        ),
        UnitPlanned(project="demo", actor=SYSTEM, unit="U1", slice="S1", files=["a.py"]),
        UnitTransitioned(
            project="demo",
            actor=SYSTEM,
            unit="U1",
            state="blocked",
            prior="working",
            block=Block(reason="awaiting-gate", subject="lint"),
        ),
        UnitTransitioned(
            project="demo",
            actor=SYSTEM,
            unit="U2",
            state="lost",
            outcome=Outcome(
                summary="silent",
                ended_by="heartbeat-lapse",
                last_heartbeat=datetime(2026, 1, 1, tzinfo=UTC),
                lapse_s=300.0,
            ),
        ),
        StartedReport(project="demo", actor=BUILDER, unit="U1"),
        BlockedReport(
            project="demo", actor=BUILDER, unit="U1", reason="awaiting-gate", subject="x"
        ),
    ]


SEED_DOCS = [msgspec.to_builtins(e) for e in seeds()]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=16,
)
huge_text = st.builds(lambda n, c: c * n, st.integers(60_000, 200_000), st.sampled_from('xé"[{'))
naive_time = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)).map(
    datetime.isoformat
)
shifted_time = st.builds(
    lambda d, h: d.replace(tzinfo=timezone(timedelta(hours=h))).isoformat(),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.integers(-12, 12),
)


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a document a value sits (dict keys and list positions)."""
    found: list[tuple[Any, ...]] = []
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else []
    )
    for key, child in items:
        found.append((*prefix, key))
        found.extend(paths(child, (*prefix, key)))
    return found


def put(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def drop(doc: Any, path: tuple[Any, ...]) -> None:
    for key in path[:-1]:
        doc = doc[key]
    del doc[path[-1]]


@st.composite
def mutated_events(draw: st.DrawFn) -> tuple[bytes, list[str]]:
    """(bytes, long strings planted in them) from a valid event mutated one to three times."""
    doc = msgspec.json.decode(msgspec.json.encode(draw(st.sampled_from(SEED_DOCS))))
    depth = 0
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(paths(doc)))
        action = draw(st.sampled_from(["replace", "drop", "add", "kind", "time", "huge", "deep"]))
        if action == "drop":
            drop(doc, where)
        elif action == "add":
            doc[draw(st.text(max_size=20))] = draw(json_values)
        elif action == "kind":
            doc["kind"] = draw(st.text(max_size=30) | huge_text)
        elif action == "time":
            times = [p for p in paths(doc) if p[-1] in ("at", "last_heartbeat")] or [("at",)]
            put(doc, draw(st.sampled_from(times)), draw(naive_time | shifted_time))
        elif action == "huge":
            put(doc, where, draw(huge_text))
        elif action == "deep":
            put(doc, where, DEEP)
            depth = draw(st.integers(1, 30_000))
        else:
            put(doc, where, draw(json_values))
        if not paths(doc):
            break
    planted = [text for _, text in _long_strings(doc)]
    data = msgspec.json.encode(doc)
    if depth and msgspec.json.encode(DEEP) in data:
        data = data.replace(msgspec.json.encode(DEEP), b"[" * depth + b"]" * depth, 1)
    return data, planted


def _long_strings(doc: Any) -> list[tuple[str, str]]:
    return [(p, t) for p, t in limits._strings(doc, "$") if len(t) > limits.SHOWN_CHARS]


raw_bytes = st.binary(max_size=300) | st.builds(
    lambda doc, cut: msgspec.json.encode(doc)[:cut], st.sampled_from(SEED_DOCS), st.integers(0, 400)
)
over_a_megabyte = st.builds(
    lambda doc, n: msgspec.json.encode({**doc, "message": "m" * n}),
    st.sampled_from(SEED_DOCS),
    st.integers(limits.MAX_EVENT_BYTES - 200, limits.MAX_EVENT_BYTES + 100_000),
)


def check(data: bytes, planted: list[str]) -> None:
    """The one property: an event that round-trips, or an InvalidEvent that quarantines."""
    try:
        event = decode_event(data)
    except InvalidEvent as exc:
        reason = str(exc)
        assert 0 < len(reason) <= limits.MAX_REASON_CHARS
        assert exc.field is None or len(exc.field) <= limits.MAX_FIELD_CHARS
        for text in planted:
            assert text not in reason  # a long value is never shown whole
        record = quarantine_record("loop.demo.unit.U1", 7, data, exc, SYSTEM)
        encoded = encode_event(record)
        assert len(encoded) < 4096 and decode_event(encoded) == record
        return
    assert event.at.tzinfo is not None
    assert len(data) <= limits.MAX_EVENT_BYTES
    assert decode_event(encode_event(event)) == event


FUZZ = settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FUZZ
@given(mutated_events())
def test_mutated_valid_events_decode_or_are_refused(case: tuple[bytes, list[str]]) -> None:
    """A mutated event (types, huge strings, times, deep nesting, unknown kinds, removed or
    added fields) decodes and round-trips, or raises InvalidEvent with a bounded reason."""
    check(*case)


@FUZZ
@given(raw_bytes)
def test_arbitrary_and_truncated_bytes_decode_or_are_refused(data: bytes) -> None:
    """Random bytes and truncated events never raise anything but InvalidEvent."""
    check(data, [])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(over_a_megabyte)
def test_messages_around_a_megabyte_decode_or_are_refused(data: bytes) -> None:
    """Messages at and over 1 MB are refused (by size or by a too-long string) with a short
    reason and a record that stays small."""
    check(data, [])
