"""The issue's poison messages, on a real server: read() yields each as an error record and
every valid neighbour as an event; each gets a small quarantine record that publishes."""

from __future__ import annotations

import msgspec

from bus import Bus, read
from schemas import (
    Actor,
    FindingRaised,
    InvalidEvent,
    MessageQuarantined,
    decode_event,
    encode_event,
    limits,
    parse_target,
    project_subjects,
)
from schemas.quarantine import quarantine_record
from schemas.reports import StartedReport

BUILDER = Actor(role="builder", principal="b1")
SYSTEM = Actor(role="system", principal="tests")


def poison(project: str) -> dict[str, tuple[str, bytes]]:
    """name -> (subject, bytes) of each message the issue saw stop the daemons."""
    finding = FindingRaised(
        project=project,
        actor=BUILDER,
        producer="builder",
        target=parse_target("code:a.py:1-1"),
        severity="low",
        message="m",
    )
    raw = encode_event(finding)
    deep = raw[:-1] + b',"evidence":{"a":' + b"[" * 5000 + b"]" * 5000 + b"}}"
    claim = msgspec.to_builtins(StartedReport(project=project, actor=BUILDER, unit="U1"))
    claim["at"] = "2026-11-30T10:00:00"
    started_subject = f"loop.{project}.report.builder.U1"
    big = msgspec.to_builtins(finding)
    big["severity"] = "x" * 5000
    return {
        "deep-evidence": (f"loop.{project}.finding.builder", deep),
        "900kb-undecodable": (
            f"loop.{project}.unit.U1",
            b'{"kind":"unit.planned.v1",' + b"9" * 900_000,
        ),
        "naive-at": (started_subject, msgspec.json.encode(claim)),
        "5000-char-value": (f"loop.{project}.finding.builder", msgspec.json.encode(big)),
    }


async def test_poison_messages_are_error_records_with_small_quarantine_records(
    bus: Bus, project: str
) -> None:
    """Deep nesting, a 900 KB undecodable message, a naive time and a 5,000-character bad
    value are each yielded with a bounded InvalidEvent between valid events that decode;
    each quarantine record is a few KB, publishes, and decodes back."""
    good = StartedReport(project=project, actor=BUILDER, unit="U2")
    cases = poison(project)
    await bus.publish(good)
    for subject, data in cases.values():
        await bus.js.publish(subject, data)
    await bus.publish(StartedReport(project=project, actor=BUILDER, unit="U3"))

    records = [r async for r in read(bus, subjects=[project_subjects(project)])]
    assert [r.event is not None for r in records] == [True, False, False, False, False, True]
    assert records[0].event == good
    for record, (name, (subject, data)) in zip(records[1:5], cases.items(), strict=True):
        assert isinstance(record.error, InvalidEvent), name
        assert len(str(record.error)) <= limits.MAX_REASON_CHARS, name
        assert record.data == data and record.subject == subject
        quarantined = quarantine_record(
            record.subject, record.seq, record.data, record.error, SYSTEM
        )
        ack = await bus.publish_transition(quarantined, expected_last_subject_seq=0)
        _, stored = await bus.get(ack.seq)
        assert len(stored) < 4096, name
        assert decode_event(stored) == quarantined
    reasons = {name: str(r.error) for name, r in zip(cases, records[1:5], strict=True)}
    assert "nests 5002 levels deep" in reasons["deep-evidence"]
    assert "timezone" in reasons["naive-at"]
    assert reasons["5000-char-value"].count("x" * 100) <= 2
    quarantine = [r async for r in read(bus, subjects=[f"loop.{project}.quarantine.>"])]
    assert all(isinstance(r.event, MessageQuarantined) for r in quarantine)
    assert len(quarantine) == 4
