"""The demo's timeline says how each slice ended against SHIP, and what ran after a wave."""

from __future__ import annotations

from slice_helpers import SYSTEM

from loopbus.timeline import Timeline
from schemas.verify import SliceShipJudged, WaveVerified


def test_ship_lines_say_shipped_or_the_first_reasons() -> None:
    shipped = SliceShipJudged(project="p", actor=SYSTEM, slice="S1", accepted="a", shipped=True)
    refused = SliceShipJudged(
        project="p", actor=SYSTEM, slice="S2", accepted="b", shipped=False,
        reasons=["wave 0 was never verified", "unit U1 ended failed, not done", "x"],
    )  # fmt: skip
    timeline = Timeline()
    assert timeline.lines(shipped) == ["slice S1 SHIPPED"]
    assert timeline.lines(refused) == [
        "slice S2 not shipped: wave 0 was never verified; unit U1 ended failed, not done (+1 more)"
    ]


def test_a_verification_line_counts_findings_and_unreached() -> None:
    run = WaveVerified(
        project="p", actor=SYSTEM, slice="S1", accepted="a", wave=0, trunk="f" * 40,
        findings=["f1"], unreached=["t::x: down", "t::y: down"],
    )  # fmt: skip
    assert Timeline().lines(run) == [
        f"wave 0 of S1 verified code-cold on {'f' * 12}: 1 findings, 2 unreached"
    ]
