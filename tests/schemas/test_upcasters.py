"""Every upcaster in schemas.upcasters: an old stored shape still decodes, as the current one."""

from __future__ import annotations

import base64

import msgspec

from schemas import MessageQuarantined, decode_event, encode_event, limits
from schemas.decisions import DecisionRequested
from schemas.quarantine import EXCERPT_BYTES
from schemas.reviews import ReviewVerdict
from schemas.upcasters import UPCASTERS

V1_RECORD = {
    "kind": "message.quarantined.v1",
    "project": "demo",
    "actor": {"role": "system", "principal": "projector"},
    "id": "01KB0000000000000000000000",
    "at": "2026-11-30T10:00:00Z",
    "v": 1,
    "original_seq": 42,
    "original_subject": "loop.demo.unit.U1",
    "field": "unit",
    "reason": "unit.planned.v1: field 'unit': Expected `str`, got `int` (value 7)",
    "data_b64": base64.b64encode(b'{"kind":"unit.planned.v1","unit":7}').decode(),
}


def test_every_upcaster_maps_an_old_tag_to_a_newer_one() -> None:
    """The table only holds tags the union no longer decodes directly (old shapes)."""
    assert "message.quarantined.v1" in UPCASTERS
    assert {"decision.requested.v1", "review.verdict.v1"} <= set(UPCASTERS)


def test_quarantine_v1_decodes_as_v2_with_its_bytes_as_excerpt() -> None:
    """A v1 record (whole original in data_b64) decodes as v2: same sequence, subject, reason
    and field, the original's size, and its bytes as the excerpt."""
    record = decode_event(msgspec.json.encode(V1_RECORD))
    assert isinstance(record, MessageQuarantined)
    assert record.kind == "message.quarantined.v2" and record.v == 2
    assert (record.original_seq, record.original_subject) == (42, "loop.demo.unit.U1")
    assert record.field == "unit" and record.reason == V1_RECORD["reason"]
    assert record.size == 35 and record.excerpt == b'{"kind":"unit.planned.v1","unit":7}'
    assert decode_event(encode_event(record)) == record


def test_quarantine_v1_with_a_huge_original_and_reason_is_cut_to_the_v2_bounds() -> None:
    """A v1 record that carried a large message and a long reason still decodes: the excerpt
    keeps the first bytes, the reason is cut, the size is the original's."""
    original = bytes(range(256)) * 3000
    doc = dict(V1_RECORD, data_b64=base64.b64encode(original).decode(), reason="r" * 10_000)
    record = decode_event(msgspec.json.encode(doc))
    assert isinstance(record, MessageQuarantined)
    assert record.size == len(original)
    assert record.excerpt == original[:EXCERPT_BYTES]
    assert len(record.reason) == limits.MAX_REASON_CHARS


def test_quarantine_v1_with_broken_base64_keeps_the_rest() -> None:
    """A v1 record whose data_b64 is not base64 decodes with an empty excerpt."""
    record = decode_event(msgspec.json.encode(dict(V1_RECORD, data_b64="@@not base64@@")))
    assert isinstance(record, MessageQuarantined)
    assert (record.size, record.excerpt_b64) == (0, "")


def test_decision_request_v1_decodes_as_v2_with_no_class() -> None:
    """A request stored before autonomy classes decodes as v2 with its class unknown (never
    guessed), escalated by nobody."""
    v1 = {
        "kind": "decision.requested.v1", "project": "demo", "v": 1,
        "actor": {"role": "system", "principal": "builder"},
        "id": "01KB0000000000000000000001", "at": "2026-11-30T10:00:00Z",
        "unit": "U1", "decision_id": "rounding", "question": "round?",
        "options": [{"id": "cents"}, {"id": "raw"}], "recommended_default": "cents",
        "confidence": "high", "routed": "auto",
    }  # fmt: skip
    record = decode_event(msgspec.json.encode(v1))
    assert isinstance(record, DecisionRequested)
    assert (record.kind, record.v, record.routed) == ("decision.requested.v2", 2, "auto")
    assert (record.autonomy, record.stated_autonomy, record.escalated_by) == (None, None, None)
    assert decode_event(encode_event(record)) == record


def test_review_verdict_v1_decodes_as_v2_escalating_nothing() -> None:
    """A verdict stored before `escalate` decodes as v2 with nothing escalated."""
    v1 = {
        "kind": "review.verdict.v1", "project": "demo", "v": 1,
        "actor": {"role": "reviewer", "principal": "rita"},
        "id": "01KB0000000000000000000002", "at": "2026-11-30T10:00:00Z",
        "unit": "U1", "request": "01KB0000000000000000000003", "head": "a" * 40,
        "verdict": "approve",
    }  # fmt: skip
    record = decode_event(msgspec.json.encode(v1))
    assert isinstance(record, ReviewVerdict)
    assert (record.kind, record.v, record.escalate) == ("review.verdict.v2", 2, [])
