"""Decoding refuses what would hurt a reader, and says so in a short reason."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import msgspec
import pytest

from schemas import (
    Actor,
    FindingRaised,
    InvalidEvent,
    Outcome,
    UnitTransitioned,
    decode_event,
    encode_event,
    limits,
    parse_target,
)
from schemas.reports import HeartbeatReport, decode_heartbeat

REVIEWER = Actor(role="reviewer", principal="r1")


def a_finding(**overrides: object) -> FindingRaised:
    fields: dict[str, object] = dict(
        project="demo",
        actor=REVIEWER,
        producer="reviewer",
        target=parse_target("code:src/app.py:10-14"),
        severity="high",
        message="unchecked None",
    )
    fields.update(overrides)
    return FindingRaised(**fields)  # type: ignore[arg-type]


def with_field(name: str, value: object) -> bytes:
    doc = msgspec.to_builtins(a_finding())
    doc[name] = value
    return msgspec.json.encode(doc)


def nested(depth: int) -> bytes:
    """A finding whose evidence holds lists ``depth`` deep (the event adds two levels)."""
    return (
        encode_event(a_finding())[:-1] + b',"evidence":{"a":' + b"[" * depth + b"]" * depth + b"}}"
    )


@pytest.mark.parametrize("depth", [5_000, 100_000], ids=["5k-levels", "100k-levels"])
def test_deep_nesting_is_an_invalid_event_not_a_recursion_error(depth: int) -> None:
    """Evidence nested thousands of levels deep is refused with its depth, never RecursionError."""
    with pytest.raises(InvalidEvent, match=rf"nests {depth + 2} levels deep, over the 64"):
        decode_event(nested(depth))


def test_nesting_up_to_the_bound_decodes() -> None:
    """Sixty-four levels, the event included, decode; sixty-five do not."""
    assert decode_event(nested(limits.MAX_DEPTH - 2)).evidence["a"] is not None
    with pytest.raises(InvalidEvent, match="nests 65 levels"):
        decode_event(nested(limits.MAX_DEPTH - 1))


def test_brackets_inside_strings_are_not_nesting() -> None:
    """A message full of '[' characters inside its text is not mistaken for deep nesting."""
    finding = a_finding(message="[" * 500 + '\\"{' * 100)
    assert decode_event(encode_event(finding)) == finding


def test_a_message_over_the_payload_limit_is_refused_by_size() -> None:
    """More than 1 MiB is refused by its size before any parsing."""
    with pytest.raises(InvalidEvent, match=r"over the 1048576 byte limit"):
        decode_event(with_field("message", "x" * (limits.MAX_EVENT_BYTES + 1)))


def test_a_string_over_the_text_limit_names_its_field() -> None:
    """A string longer than the text bound is refused naming its field, however deep."""
    with pytest.raises(InvalidEvent, match=r"field 'message': a string of 70000 characters"):
        decode_event(with_field("message", "y" * 70_000))
    with pytest.raises(InvalidEvent, match=r"field 'evidence\.log\[1\]'") as caught:
        decode_event(with_field("evidence", {"log": ["ok", "z" * 70_000]}))
    assert caught.value.field == "evidence.log[1]"


def test_a_string_at_the_text_limit_decodes() -> None:
    """A string of exactly the text bound is accepted."""
    finding = a_finding(message="m" * limits.MAX_TEXT_CHARS)
    assert decode_event(encode_event(finding)) == finding


@pytest.mark.parametrize(
    "stamp", ["2026-11-30T10:00:00", "2026-11-30T10:00:00.123456"], ids=["seconds", "micros"]
)
def test_a_time_without_an_offset_is_refused(stamp: str) -> None:
    """An `at` with no UTC offset is refused, naming the field: compared with an aware time
    it would raise TypeError inside every fold."""
    with pytest.raises(InvalidEvent, match=r"field 'at': Expected `datetime` with a timezone"):
        decode_event(with_field("at", stamp))


def test_a_time_with_any_offset_decodes_to_the_same_instant() -> None:
    """An offset other than Z is accepted as the instant it names."""
    event = decode_event(with_field("at", "2026-11-30T12:00:00+02:00"))
    assert event.at == datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def test_every_other_time_field_refuses_naive_times_too() -> None:
    """An outcome's last heartbeat and a heartbeat report's time must carry an offset."""
    system = Actor(role="system", principal="t")
    lost = UnitTransitioned(
        project="p",
        actor=system,
        unit="U1",
        state="lost",
        outcome=Outcome(
            summary="silent",
            ended_by="heartbeat-lapse",
            last_heartbeat=datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=-5))),
        ),
    )
    assert decode_event(encode_event(lost)) == lost
    naive = encode_event(lost).replace(b'-05:00"', b'"')
    with pytest.raises(InvalidEvent, match=r"field 'outcome\.last_heartbeat'"):
        decode_event(naive)
    beat = msgspec.json.encode(HeartbeatReport(project="p", unit="U1", actor=system))
    assert decode_heartbeat(beat).at.tzinfo is not None
    with pytest.raises(msgspec.ValidationError, match="timezone"):
        decode_heartbeat(beat.replace(b'Z"', b'"'))


def test_a_long_bad_value_is_shown_once_and_cut() -> None:
    """A 5,000-character bad value appears once, cut to 200 characters, with its length."""
    value = "abcdefghij" * 500
    with pytest.raises(InvalidEvent) as caught:
        decode_event(with_field("severity", value))
    reason = str(caught.value)
    assert len(reason) < 400
    assert reason.count("abcdefghij") <= limits.SHOWN_CHARS // 10
    assert "(5000 chars)" in reason and value not in reason
    assert caught.value.field == "severity"


def test_an_unknown_kind_reason_is_bounded() -> None:
    """An unknown kind of any length gives a short reason pointing at the catalogue."""
    with pytest.raises(InvalidEvent, match=r"docs/events\.md") as caught:
        decode_event(with_field("kind", "k" * 10_000))
    assert len(str(caught.value)) <= limits.MAX_REASON_CHARS


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"[1,2]", id="array"),
        pytest.param(b'"text"', id="string"),
        pytest.param(b"\xff\xfe\x00", id="binary"),
        pytest.param(b'{"kind":', id="truncated"),
        pytest.param(b'{"kind":"finding.raised.v1","project":{"a":[]}}', id="wrong-type"),
        pytest.param(b'{"kind":' + b"9" * 5000 + b"}", id="huge-number"),
    ],
)
def test_any_bytes_give_an_invalid_event(data: bytes) -> None:
    """Malformed bytes of every shape raise InvalidEvent with a bounded reason."""
    with pytest.raises(InvalidEvent) as caught:
        decode_event(data)
    assert 0 < len(str(caught.value)) <= limits.MAX_REASON_CHARS


def test_a_failing_upcaster_is_an_invalid_event() -> None:
    """An upcaster that raises on an old document it cannot handle refuses that document."""

    def broken(doc: dict[str, object]) -> dict[str, object]:
        raise KeyError("text")

    raw = with_field("kind", "finding.v0")
    with pytest.raises(InvalidEvent, match="KeyError"):
        decode_event(raw, upcasters={"finding.v0": broken})
