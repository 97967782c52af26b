"""The ``wave_review`` projection: units' merge commits, which merged waves had their
union diff reviewed, which units that review re-opened and whether their re-review is had,
and which of its findings are open. Pure.

With wave review on (``[review] wave = true``), the dispatcher holds the next wave while a
merged wave awaits its review (:func:`dispatch_held`) and the slice's close while a review
or a re-review is owed or a wave-review finding is open (:func:`close_held`).

A finding counts as the wave review's only when the ``WaveReviewed`` fact the verifier
wrote lists it (the verifier publishes its findings and that fact in one batch, findings
first): the reviewer daemon re-raises a unit reviewer's findings as the system with the
criterion and evidence the agent chose, so a finding's shape alone would let any unit
reviewer hold a slice's close or stand against its SHIP. Its wave is the review's, not
what the finding's evidence says.
"""

from dataclasses import dataclass

import msgspec

from projections.base import Fold
from projections.lifecycle import Status, settled_as
from projections.slices import SliceView
from projections.verify import merged_waves, wave_key, wave_units
from schemas import Event, FindingRaised, FindingResolved
from schemas.lifecycle import FindingDismissed, FindingReopened
from schemas.merges import TrunkAdvanced
from schemas.wave_review import WAVE_REVIEW_CRITERION, UnitReReviewed, WaveReviewed


class Merge(msgspec.Struct, kw_only=True):
    merge: str
    previous: str
    order: int


class WaveFinding(msgspec.Struct, kw_only=True):
    id: str
    accepted: str
    wave: int
    unit: str | None
    message: str
    status: Status = "open"


class WaveReviewState(msgspec.Struct, kw_only=True):
    merges: dict[str, Merge] = {}
    """unit -> its latest merge onto trunk."""
    reviewed: dict[str, WaveReviewed] = {}
    rereviewed: dict[str, UnitReReviewed] = {}
    """``accepted:wave:unit`` -> the re-review of a re-opened unit."""
    findings: dict[str, WaveFinding] = {}
    """The findings a wave review listed, by id."""
    candidates: dict[str, WaveFinding] = {}
    """Findings shaped like a wave review's that no review has listed (yet): they hold
    nothing."""
    merged: int = 0
    trees: dict[str, str] = {}
    """merge commit -> its tree (what trunk's gate suite was run on)."""


def initial() -> WaveReviewState:
    return WaveReviewState()


def apply(state: WaveReviewState, event: Event) -> WaveReviewState:
    match event:
        case TrunkAdvanced():
            state.merged += 1
            state.merges[event.unit] = Merge(
                merge=event.merge, previous=event.previous, order=state.merged
            )
            state.trees[event.merge] = event.tree
        case WaveReviewed():
            if state.reviewed.setdefault(wave_key(event.accepted, event.wave), event) is event:
                _listed(state, event)
        case UnitReReviewed():
            key = f"{wave_key(event.accepted, event.wave)}:{event.unit}"
            state.rereviewed.setdefault(key, event)
        case FindingRaised() if (
            event.actor.role == "system"
            and event.producer == "reviewer"
            and event.criterion == WAVE_REVIEW_CRITERION
            and isinstance(event.evidence.get("accepted"), str)
        ):
            if event.id not in state.findings:
                state.candidates.setdefault(
                    event.id,
                    WaveFinding(
                        id=event.id,
                        accepted=str(event.evidence["accepted"]),
                        wave=0,
                        unit=event.unit,
                        message=event.message,
                    ),
                )
        # Only the system settles a finding (the ratchet daemon answering an operator's
        # claim): the same facts from any other credential are forgeries and change nothing.
        case FindingResolved() | FindingDismissed() | FindingReopened() if (
            event.actor.role == "system" and event.finding in state.findings
        ):
            state.findings[event.finding].status = settled_as(event)
        case _:
            pass
    return state


def _listed(state: WaveReviewState, review: WaveReviewed) -> None:
    """The review's own findings start to count, on the review's plan and wave."""
    for finding in review.findings:
        found = state.candidates.pop(finding, None)
        if found is not None:
            found.accepted, found.wave = review.accepted, review.wave
            state.findings[finding] = found


FOLD = Fold(name="wave_review", state_type=WaveReviewState, initial=initial, apply=apply)


# -- queries ----------------------------------------------------------------------------


@dataclass(frozen=True)
class WaveToReview:
    """A merged wave owed its review: trunk before its first merge (``base``), after its
    last (``head``), and each done unit's merge as (merge, previous)."""

    wave: int
    base: str
    head: str
    merges: dict[str, tuple[str, str]]


def to_review(state: WaveReviewState, view: SliceView) -> WaveToReview | None:
    """The first merged wave of an open slice not reviewed yet whose merges are all known."""
    if view.status != "open":
        return None
    for wave in merged_waves(view):
        if wave_key(view.accepted, wave) in state.reviewed:
            continue
        done = [u for u in wave_units(view, wave) if view.units[u].state == "done"]
        merges = {u: state.merges[u] for u in done if u in state.merges}
        if len(merges) < len(done):
            return None  # a merge fact not folded yet: the wave is reviewed once it is
        ordered = sorted(merges.values(), key=lambda m: m.order)
        return WaveToReview(
            wave=wave,
            base=ordered[0].previous,
            head=ordered[-1].merge,
            merges={u: (m.merge, m.previous) for u, m in merges.items()},
        )
    return None


def rereviews_owed(state: WaveReviewState, view: SliceView) -> list[tuple[WaveReviewed, str]]:
    """(the wave's review, a unit it re-opened) for each re-review not had yet."""
    out: list[tuple[WaveReviewed, str]] = []
    for review in sorted(state.reviewed.values(), key=lambda r: r.wave):
        if review.accepted != view.accepted:
            continue
        for unit in review.reopened:
            if f"{wave_key(review.accepted, review.wave)}:{unit}" not in state.rereviewed:
                out.append((review, unit))
    return out


def open_findings(state: WaveReviewState, accepted: str) -> list[WaveFinding]:
    return [f for f in state.findings.values() if f.accepted == accepted and f.status == "open"]


def dispatch_held(state: WaveReviewState, view: SliceView, wave: int) -> bool:
    return any(
        w < wave and wave_key(view.accepted, w) not in state.reviewed for w in merged_waves(view)
    )


def close_held(state: WaveReviewState, view: SliceView) -> str:
    """Why the slice may not close yet for its wave review (``""``: it may)."""
    for wave in merged_waves(view):
        if wave_key(view.accepted, wave) not in state.reviewed:
            return f"wave {wave} awaits its review"
    owed = rereviews_owed(state, view)
    if owed:
        return f"unit {owed[0][1]} awaits its re-review"
    found = open_findings(state, view.accepted)
    if found:
        return f"wave-review finding {found[0].id} is open"
    return ""


def ship_reasons(state: WaveReviewState, view: SliceView) -> list[str]:
    """What the wave review leaves standing against SHIP."""
    out: list[str] = []
    for wave in merged_waves(view):
        review = state.reviewed.get(wave_key(view.accepted, wave))
        if review is None:
            out.append(f"wave {wave} had no wave review")
        elif review.error:
            out.append(f"wave {wave}: no wave review was had: {review.error}")
    for found in sorted(state.findings.values(), key=lambda f: f.id):
        if found.accepted == view.accepted and found.status != "resolved":
            owner = f" (unit {found.unit})" if found.unit else ""
            out.append(f"wave-review finding {found.id}{owner} is {found.status}: {found.message}")
    return out
