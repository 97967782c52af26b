"""``status``'s (and ``replay``'s) lines for the ``verify`` and ``wave_review`` views.

A person asks of each slice: was each merged wave verified (and what did the verifier
say), was its union diff reviewed (and the verdict), which findings of either are open,
what the SHIP verdict is, and what the loop still waits for. That is a line or two per
slice; the whole record (every check, score, trigger and file attribution) is ``--json``.

``not yet`` names the first merged wave of an open slice with no verifier run (or no wave
review) recorded, and each re-opened unit not re-reviewed: facts of the log, which the loop
waits on only when verification or wave review is configured. ``status`` does not read the
configuration, so they are shown only when the log shows the project uses it (a verifier
run or finding, or a wave review, re-review or finding, is recorded): on a project with no
``[verify]`` or ``[review] wave`` they would be on every open slice and say the loop waits
when it does not. They are judged over the slice's units, so they are shown only when
the ``slices`` state at hand holds every unit of the slice (``status`` pages units).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from loopbus.event_line import text
from loopbus.terminal_text import count
from projections import verify as verify_fold
from projections import wave_review as wave_review_fold
from projections.slices import SlicesState, SliceView
from schemas.scores import AxisScore

Sizes = Mapping[str, int]
_NONE: Sizes = {}


def _views(slices: SlicesState | None) -> dict[str, SliceView]:
    """accepted -> its slice, for the slices whose every unit was read."""
    if slices is None:
        return {}
    return {
        v.accepted: v for v in slices.slices.values() if all(unit in v.units for unit in v.order)
    }


def _scores(scores: list[AxisScore]) -> str:
    return ", ".join(f"{s.axis} {s.score}" for s in scores)


def _in_use(state: object, sizes: Sizes, *fields: str) -> bool:
    """Whether any of ``state``'s ``fields`` records something (``sizes`` has the totals
    of a paged state)."""
    return any(sizes.get(field, len(getattr(state, field))) for field in fields)


def _named(accepted: str, slice_of: dict[str, str]) -> str:
    return slice_of.get(accepted) or f"plan {accepted[:12]}"


def render_verify(
    state: verify_fold.VerifyState, sizes: Sizes = _NONE, slices: SlicesState | None = None
) -> list[str]:
    runs = list(state.waves.values())
    open_found = [f for f in state.findings.values() if f.status == "open"]
    lines = [
        f"verify: {count(sizes.get('waves', len(runs)), 'wave')} recorded "
        f"({sum(1 for r in runs if r.error)} unverified), "
        f"{count(len(open_found), 'verifier finding')} open "
        f"of {sizes.get('findings', len(state.findings))}, "
        f"{count(sizes.get('judged', len(state.judged)), 'slice')} judged for SHIP"
    ]
    # The first wave the verifier owes, only once it has run (or found) on this project.
    views = _views(slices) if _in_use(state, sizes, "waves", "findings") else {}
    slice_of = {r.accepted: r.slice for r in runs} | {
        j.accepted: j.slice for j in state.judged.values()
    }
    slice_of |= {a: v.slice for a, v in views.items()}
    by_plan: dict[str, list[str]] = defaultdict(list)
    for run in sorted(runs, key=lambda r: r.wave):
        if run.error:
            said = f"unverified: {run.error}"
        else:
            passed = sum(1 for c in run.checks if c.passed)
            said = (
                f"verified, {passed} of {len(run.checks)} checks pass, "
                f"{len(run.findings)} findings, {len(run.unreached)} criteria unreached"
                + (f", scores {_scores(run.scores)}" if run.scores else "")
                + (f": {text(run.summary)}" if run.summary else "")
            )
        by_plan[run.accepted].append(f"wave {run.wave} {said}")
    for found in sorted(open_found, key=lambda f: (f.wave, f.id)):
        unit = f" unit {found.unit}" if found.unit else ""
        by_plan[found.accepted].append(
            f"wave {found.wave} finding {found.id} open{unit}: {found.message}"
        )
    for accepted, judged in state.judged.items():
        verdict = "SHIP" if judged.shipped else "NO SHIP"
        why = f": {'; '.join(judged.reasons)}" if judged.reasons else ""
        by_plan[accepted].append(f"{verdict}{why}")
    for accepted, view in views.items():
        wave = verify_fold.to_verify(state, view)
        if wave is not None:
            by_plan[accepted].append(f"not yet: wave {wave} merged, no verifier run recorded")
    for accepted in sorted(by_plan, key=lambda a: _named(a, slice_of)):
        lines += [f"  {_named(accepted, slice_of)}: {said}" for said in by_plan[accepted]]
    return lines


def render_wave_review(
    state: wave_review_fold.WaveReviewState,
    sizes: Sizes = _NONE,
    slices: SlicesState | None = None,
) -> list[str]:
    reviews = list(state.reviewed.values())
    open_found = [f for f in state.findings.values() if f.status == "open"]
    lines = [
        f"wave review: {count(sizes.get('reviewed', len(reviews)), 'wave')} reviewed "
        f"({sum(1 for r in reviews if r.error)} without a review), "
        f"{count(sizes.get('rereviewed', len(state.rereviewed)), 're-review')} had, "
        f"{count(len(open_found), 'finding')} open of "
        f"{sizes.get('findings', len(state.findings))}, {count(state.merged, 'merge')} seen"
    ]
    # What wave review owes, only once it has reviewed (or found) on this project.
    in_use = _in_use(state, sizes, "reviewed", "rereviewed", "findings")
    views = _views(slices) if in_use else {}
    slice_of = {r.accepted: r.slice for r in reviews} | {a: v.slice for a, v in views.items()}
    by_plan: dict[str, list[str]] = defaultdict(list)
    for review in sorted(reviews, key=lambda r: r.wave):
        if review.error:
            said = f"no review: {review.error}"
        else:
            reopened = f", re-opened {', '.join(review.reopened)}" if review.reopened else ""
            said = (
                f"{review.verdict or 'no verdict'} on {review.base[:12]}..{review.head[:12]} "
                f"({len(review.attribution)} files, {len(review.findings)} findings{reopened})"
            )
        by_plan[review.accepted].append(f"wave {review.wave} {said}")
    for again in sorted(state.rereviewed.values(), key=lambda r: (r.wave, r.unit)):
        verdict = f"error: {again.error}" if again.error else again.verdict or "no verdict"
        by_plan[again.accepted].append(
            f"wave {again.wave} unit {again.unit} re-reviewed: {verdict}"
        )
    for found in sorted(open_found, key=lambda f: (f.wave, f.id)):
        unit = f" unit {found.unit}" if found.unit else ""
        by_plan[found.accepted].append(
            f"wave {found.wave} finding {found.id} open{unit}: {found.message}"
        )
    for accepted, view in views.items():
        if view.status != "open":
            continue
        waves = verify_fold.merged_waves(view)
        unreviewed = [w for w in waves if verify_fold.wave_key(accepted, w) not in state.reviewed]
        if unreviewed:
            by_plan[accepted].append(f"not yet: wave {unreviewed[0]} merged, not reviewed")
        by_plan[accepted] += [
            f"not yet: unit {unit} re-opened by wave {review.wave}, not re-reviewed"
            for review, unit in wave_review_fold.rereviews_owed(state, view)
        ]
    for accepted in sorted(by_plan, key=lambda a: _named(a, slice_of)):
        lines += [f"  {_named(accepted, slice_of)}: {said}" for said in by_plan[accepted]]
    return lines
