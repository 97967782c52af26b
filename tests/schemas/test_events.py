"""The wire contract: explicit versioned tags, tolerant decoding, errors that name the field."""

from __future__ import annotations

import re

import msgspec
import pytest

from schemas import (
    EVENT_TYPES,
    Actor,
    Block,
    FindingRaised,
    InvalidEvent,
    InvalidValue,
    Outcome,
    UnitPlanned,
    UnitTransitioned,
    decode_event,
    encode_event,
    parse_target,
    subject_of,
)
from schemas.targets import CodeTarget, format_target
from schemas.upcasters import upcast

ACTOR = Actor(role="reviewer", principal="r1")


def a_finding(**overrides: object) -> FindingRaised:
    fields: dict[str, object] = dict(
        project="demo",
        actor=ACTOR,
        producer="reviewer",
        target=parse_target("code:src/app.py:10-14"),
        severity="high",
        criterion="C1",
        message="unchecked None",
    )
    fields.update(overrides)
    return FindingRaised(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("event_type", EVENT_TYPES, ids=lambda t: t.__name__)
def test_every_kind_has_an_explicit_versioned_tag(event_type: type) -> None:
    """Every kind's tag is written out and ends in .v<N> matching its version field."""
    tag = event_type.__struct_config__.tag
    assert isinstance(tag, str) and re.fullmatch(r"[a-z]+(\.[a-z_-]+)*\.v\d+", tag)
    version = next(f.default for f in msgspec.structs.fields(event_type) if f.name == "v")
    assert tag.endswith(f".v{version}")


def test_tags_are_unique() -> None:
    """No two kinds share a tag (a shared tag would decode one as the other)."""
    tags = [t.__struct_config__.tag for t in EVENT_TYPES]
    assert len(tags) == len(set(tags))


def test_finding_round_trips_and_derives_its_subject() -> None:
    """A finding encodes and decodes back equal; a reviewer's finding is a claim and lives
    under its role and principal, the system's on loop.<project>.finding.<producer>."""
    finding = a_finding()
    assert decode_event(encode_event(finding)) == finding
    assert subject_of(finding) == "loop.demo.claim.reviewer.r1.finding.reviewer"
    system = a_finding(actor=Actor(role="system", principal="gate-runner@h:1"))
    assert subject_of(system) == "loop.demo.finding.reviewer"
    assert finding.key == ("code:src/app.py:10-14", "high", "C1")


def test_unit_events_share_the_unit_subject() -> None:
    """Planning and every transition of a unit are on one subject, so they can be sequenced."""
    system = Actor(role="system", principal="t")
    planned = UnitPlanned(project="p", actor=system, unit="U1", slice="S1")
    moved = UnitTransitioned(project="p", actor=system, unit="U1", state="working")
    assert subject_of(planned) == subject_of(moved) == "loop.p.unit.U1"


def test_unknown_fields_are_tolerated() -> None:
    """A newer producer's extra field does not stop an older reader decoding the event."""
    finding = a_finding()
    raw = encode_event(finding).replace(b'"message"', b'"added_later":{"x":1},"message"')
    assert decode_event(raw) == finding


@pytest.mark.parametrize(
    ("mutation", "field", "value"),
    [
        pytest.param((b'"start":10', b'"start":"ten"'), "target.start", "ten", id="wrong-type"),
        pytest.param((b'"severity":"high"', b'"severity":"huge"'), "severity", "huge", id="enum"),
        pytest.param((b'"project":"demo"', b'"project":"de mo"'), "project", "de mo", id="token"),
        pytest.param(
            (b'"kind":"finding.raised.v1"', b'"kind":"finding.exploded.v1"'),
            "kind",
            "finding.exploded.v1",
            id="unknown-kind",
        ),
    ],
)
def test_invalid_value_names_field_and_value(
    mutation: tuple[bytes, bytes], field: str, value: str
) -> None:
    """A bad value is refused with an error naming the field and the value found there."""
    raw = encode_event(a_finding()).replace(*mutation)
    with pytest.raises(InvalidEvent) as caught:
        decode_event(raw)
    assert caught.value.field == field
    assert caught.value.value == value
    assert field in str(caught.value) and value in str(caught.value)


def test_not_json_is_an_invalid_event() -> None:
    """Bytes that are not JSON are refused as an invalid event, not a crash."""
    with pytest.raises(InvalidEvent, match="not a JSON event document"):
        decode_event(b"\x00garbage")


def test_code_target_cannot_end_before_it_starts() -> None:
    """A code target whose line range ends before it starts cannot be constructed."""
    with pytest.raises(InvalidValue, match="must not end before it starts"):
        CodeTarget(path="a.py", start=9, end=3)


def test_code_target_needs_a_path() -> None:
    """A code target without a path cannot be constructed."""
    with pytest.raises(InvalidValue, match="needs a file path"):
        CodeTarget(path="", start=1, end=1)


def test_backwards_range_is_refused_on_decode_too() -> None:
    """Decoding a stored code target with end < start fails, naming the target field."""
    raw = encode_event(a_finding()).replace(b'"end":14', b'"end":2')
    with pytest.raises(InvalidEvent, match="must not end before it starts") as caught:
        decode_event(raw)
    assert caught.value.field == "target"


@pytest.mark.parametrize(
    "text",
    [
        "code:src/app.py:10-14",
        "code:a.py:3-3",
        "plan:S1",
        "plan:S1:fact-3",
        "record:01ABC",
        "check:lint",
        "budget:gate_wall_clock",
        "profile:service:http",
        "decision:D7",
    ],
)
def test_target_text_round_trips(text: str) -> None:
    """Every target type parses from and formats back to the same text."""
    assert format_target(parse_target(text)) == text


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("src/app.py", "expected TYPE:VALUE"),
        ("code:app.py", "code:PATH:START-END"),
        ("code:app.py:x-2", "whole numbers"),
        ("code:app.py:0-2", "numbered from 1"),
        ("line:app.py:1", "TYPE must be one of"),
    ],
)
def test_bad_target_text_says_what_to_write(text: str, hint: str) -> None:
    """A malformed target is refused with a hint showing the expected shape."""
    with pytest.raises(InvalidValue, match=re.escape(hint)):
        parse_target(text)


def test_blocked_transition_must_carry_its_block() -> None:
    """A blocked state without a block, or a terminal state without an outcome, is refused."""
    system = Actor(role="system", principal="t")
    with pytest.raises(InvalidValue, match="blocked unit must carry a block"):
        UnitTransitioned(project="p", actor=system, unit="U1", state="blocked")
    with pytest.raises(InvalidValue, match="terminal state must carry an outcome"):
        UnitTransitioned(project="p", actor=system, unit="U1", state="lost")
    with pytest.raises(InvalidValue, match="must name what it waits on"):
        Block(reason="awaiting-gate", subject="")
    lost = UnitTransitioned(
        project="p",
        actor=system,
        unit="U1",
        state="lost",
        outcome=Outcome(summary="silent", ended_by="heartbeat-lapse", lapse_s=300.0),
    )
    assert decode_event(encode_event(lost)) == lost


def test_upcaster_rewrites_an_old_shape_before_decoding() -> None:
    """An old tag with an upcaster decodes as the current kind; without one it is refused."""
    current = a_finding()
    old_doc = msgspec.to_builtins(current)
    old_doc["kind"] = "finding.v0"
    old_doc["text"] = old_doc.pop("message")
    old_raw = msgspec.json.encode(old_doc)

    def v0_to_v1(doc: dict[str, object]) -> dict[str, object]:
        doc = dict(doc)
        doc["kind"] = "finding.raised.v1"
        doc["message"] = doc.pop("text")
        return doc

    assert decode_event(old_raw, upcasters={"finding.v0": v0_to_v1}) == current
    with pytest.raises(InvalidEvent, match=r"unknown event kind 'finding\.v0'"):
        decode_event(old_raw, upcasters={})


def test_upcaster_cycle_is_a_programming_error() -> None:
    """A cycle in the upcaster table is caught instead of looping for ever."""
    table = {"a.v1": lambda d: {**d, "kind": "a.v2"}, "a.v2": lambda d: {**d, "kind": "a.v1"}}
    with pytest.raises(RuntimeError, match="upcaster cycle"):
        upcast({"kind": "a.v1"}, table)


def test_text_that_is_not_utf8_is_refused_naming_the_field() -> None:
    """A lone surrogate (a byte that was not UTF-8, as Python hands on an argument, a file
    name or a variable) is refused as InvalidEvent naming the field: the encoder's own
    UnicodeEncodeError named nothing and ended a command in a traceback."""
    with pytest.raises(InvalidEvent) as refused:
        encode_event(a_finding(message="bad \udcff"))
    assert (refused.value.field, refused.value.value) == ("$.message", "bad \udcff")
    assert "is not UTF-8 text" in str(refused.value) and "finding.raised" in str(refused.value)
    with pytest.raises(InvalidEvent) as nested:
        encode_event(a_finding(evidence={"files": ["ok.py", "caf\udce9.py"]}))
    assert nested.value.field == "$.evidence.files[1]"
