"""The quarantine record: built from any failure, always small, always publishable."""

from __future__ import annotations

import pytest

from schemas import Actor, InvalidEvent, decode_event, encode_event, limits, subject_of
from schemas.quarantine import (
    EXCERPT_BYTES,
    UNKNOWN_PROJECT,
    is_quarantine_subject,
    quarantine_record,
)

SYSTEM = Actor(role="system", principal="projector")


def test_a_record_of_a_near_limit_message_is_small() -> None:
    """A 900 KB undecodable message gives a record of a few KB that keeps its size and the
    first 1 KiB, not a record over the payload limit."""
    data = b"{" + b"x" * 900_000
    with pytest.raises(InvalidEvent) as caught:
        decode_event(data)
    record = quarantine_record("loop.demo.unit.U1", 17, data, caught.value, SYSTEM)
    encoded = encode_event(record)
    assert len(encoded) < 4096
    assert record.size == len(data) and record.excerpt == data[:EXCERPT_BYTES]
    assert decode_event(encoded) == record
    assert subject_of(record) == "loop.demo.quarantine.17"


def test_a_record_carries_the_bounded_reason_and_field() -> None:
    """The reason and field come from the error, cut to their bounds."""
    error = InvalidEvent("r" * 5000, field="f" * 1000)
    record = quarantine_record("loop.demo.unit.U1", 3, b"{}", error, SYSTEM)
    assert len(record.reason) == limits.MAX_REASON_CHARS
    assert record.field is not None and len(record.field) == limits.MAX_FIELD_CHARS
    assert decode_event(encode_event(record)) == record


@pytest.mark.parametrize(
    ("subject", "project"),
    [
        pytest.param("loop.demo.unit.U1", "demo", id="project-subject"),
        pytest.param("loop.de mo.unit.U1", UNKNOWN_PROJECT, id="bad-token"),
        pytest.param("loop", UNKNOWN_PROJECT, id="no-project"),
    ],
)
def test_a_record_is_filed_under_the_subjects_project(subject: str, project: str) -> None:
    """A record lands in the subject's project, or in _unknown when it names none."""
    record = quarantine_record(subject, 9, b"x", "undecodable", SYSTEM)
    assert record.project == project
    assert decode_event(encode_event(record)) == record


def test_quarantine_subjects_are_recognised() -> None:
    """Only loop.<project>.quarantine.<seq> is a quarantine subject."""
    assert is_quarantine_subject("loop.demo.quarantine.12")
    assert not is_quarantine_subject("loop.demo.unit.quarantine")
    assert not is_quarantine_subject("loop")
