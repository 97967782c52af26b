"""Events stored before scores and change sizes existed still decode, as unscored and
unmeasured (never as a met floor or a small change)."""

from __future__ import annotations

import json

from slice_helpers import SYSTEM

from schemas import decode_event, encode_event
from schemas.reviews import ReviewVerdict
from schemas.slices import RunEntryCompleted


def _stored_without(event: object, field: str) -> bytes:
    doc = json.loads(encode_event(event))  # type: ignore[arg-type]
    del doc[field]
    return json.dumps(doc).encode()


def test_a_verdict_stored_before_scores_decodes_unscored() -> None:
    verdict = ReviewVerdict(
        project="p",
        actor=SYSTEM,
        unit="U1",
        request="01J0000000000000000000000A",
        head="a" * 40,
        verdict="approve",
    )
    decoded = decode_event(_stored_without(verdict, "scores"))
    assert isinstance(decoded, ReviewVerdict) and decoded.scores == []


def test_a_completion_stored_before_sizes_decodes_unmeasured() -> None:
    entry = RunEntryCompleted(
        project="p", actor=SYSTEM, slice="S1", unit="U1", dispatch="d", state="done"
    )
    decoded = decode_event(_stored_without(entry, "lines_changed"))
    assert isinstance(decoded, RunEntryCompleted) and decoded.lines_changed is None
