"""The wave-review fold counts only the findings its own system-written review lists.

The reviewer daemon re-raises a unit reviewer's findings as the system, with the criterion
and the evidence the agent chose, so a finding shaped like a wave-review finding can be
published by any unit reviewer. Only the ``WaveReviewed`` fact, which the verifier writes
in the same batch as its findings, says which findings are the wave review's.
"""

from __future__ import annotations

from slice_helpers import SYSTEM, accepted, plan, transition, unit

from projections import slices, wave_review
from schemas import Actor, Event, FindingRaised, parse_target
from schemas.ids import new_id
from schemas.merges import TrunkAdvanced
from schemas.slices import SlicePlanAccepted
from schemas.wave_review import WAVE_REVIEW_CRITERION, WaveReviewed

P = "shop"
SHA = "a" * 40
REVIEWER = Actor(role="reviewer", principal="unit-reviewer")


def merged_wave() -> list[Event]:
    """Slice S1 with one unit, done and merged: wave 0 is owed its review."""
    events = [
        *accepted(P, plan("S1", unit("U1"))),
        transition(P, "U1", "done", by="merged", commit=SHA),
        TrunkAdvanced(
            project=P,
            actor=SYSTEM,
            trunk="main",
            unit="U1",
            commit=SHA,
            merge="b" * 40,
            tree="c" * 40,
            previous="d" * 40,
            cause=new_id(),
        ),
    ]
    return events


def acceptance(events: list[Event]) -> str:
    [plan_accepted] = [e for e in events if isinstance(e, SlicePlanAccepted)]
    return plan_accepted.id


def shaped_finding(accepted_id: str, actor: Actor = SYSTEM) -> FindingRaised:
    """A finding shaped like a wave review's: what the system relays from a unit reviewer
    who chose the wave-review criterion and the evidence naming the slice's plan."""
    return FindingRaised(
        project=P,
        actor=actor,
        producer="reviewer",
        target=parse_target("code:src/u1.py:1-1"),
        severity="high",
        criterion=WAVE_REVIEW_CRITERION,
        cls="defect",
        message="hold this slice open",
        evidence={"accepted": accepted_id, "wave": 0, "verdict": "v", "request": "r"},
        unit="U1",
        slice="S1",
    )


def reviewed(accepted_id: str, findings: list[str], actor: Actor = SYSTEM) -> WaveReviewed:
    return WaveReviewed(
        project=P,
        actor=actor,
        slice="S1",
        accepted=accepted_id,
        wave=0,
        verdict="reject" if findings else "approve",
        findings=findings,
    )


def close_held(events: list[Event]) -> str:
    view = slices.FOLD.fold(events).slices["S1"]
    return wave_review.close_held(wave_review.FOLD.fold(events), view)


def test_a_finding_the_wave_review_did_not_list_holds_nothing() -> None:
    """A relayed finding with the wave-review criterion, before or after an approving
    review that does not list it, neither holds the close nor stands against SHIP."""
    events = merged_wave()
    accepted_id = acceptance(events)
    forged = shaped_finding(accepted_id)
    for history in (
        [*events, reviewed(accepted_id, []), forged],
        [*events, forged, reviewed(accepted_id, [])],
    ):
        assert close_held(history) == ""
        view = slices.FOLD.fold(history).slices["S1"]
        assert wave_review.ship_reasons(wave_review.FOLD.fold(history), view) == []


def test_a_review_not_written_by_the_system_lists_nothing() -> None:
    """A WaveReviewed from an agent's credential neither reviews the wave nor makes a
    finding it lists count."""
    events = merged_wave()
    accepted_id = acceptance(events)
    forged = shaped_finding(accepted_id)
    history = [*events, forged, reviewed(accepted_id, [forged.id], actor=REVIEWER)]
    assert close_held(history) == "wave 0 awaits its review"
    assert wave_review.FOLD.fold(history).findings == {}


def test_a_finding_the_wave_review_lists_holds_the_close_until_settled() -> None:
    """The verifier's own finding, listed by its review (published in one batch, findings
    first), holds the close."""
    events = merged_wave()
    accepted_id = acceptance(events)
    found = shaped_finding(accepted_id)
    history = [*events, found, reviewed(accepted_id, [found.id])]
    assert close_held(history) == f"wave-review finding {found.id} is open"
    state = wave_review.FOLD.fold(history)
    assert [f.id for f in wave_review.open_findings(state, accepted_id)] == [found.id]
