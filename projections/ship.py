"""The SHIP predicate: may a closed slice be called shipped? Pure: over the ``slices`` and
``verify`` folds and the project's ``[ship]`` settings.

Shipped means no reason below stands:

* a unit did not end done (failed, lost, never dispatched because a blocker failed);
* the increment did not boot (the boot check's result on trunk was not ``pass``);
* a merged wave was never verified, or the verifier could not verify it (its error);
* the verifier listed something it could not reach (what was not verified is not shipped);
* a verifier finding was not resolved (open, or dismissed rather than fixed);
* an axis scored below its floor, or was never scored (a missing score is no met floor),
  by the verifier over the slice or by the reviewer of a done unit (the latest verdict
  the system accepted);
* with wave review on, a merged wave had no wave review (or its review failed), or a
  wave-review finding was not resolved (by the re-review of the unit it re-opened);
* a done unit's change was larger than ``max_unit_lines``, or its size was not measured
  (it is reported, the slice still closes: the bound never hangs the loop).

Without a ``[verify] command`` nothing is verified code-cold and nothing is scored, so
such a slice closes not shipped, and says why.
"""

from dataclasses import dataclass, field

from projections import trunk_green, verify, wave_review
from projections.slice_dispatch import settled_summary
from projections.slices import SliceView
from projections.trunk_green import TrunkGates
from projections.verify import VerifyState
from projections.wave_review import WaveReviewState
from schemas.scores import DEFAULT_FLOORS, AxisScore, below_floor


@dataclass(frozen=True)
class ShipRules:
    """What a project's ``loopbus.toml`` says SHIP needs."""

    verify: bool = False
    """A ``[verify] command`` is configured (waves are verified code-cold)."""
    floors: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_FLOORS))
    max_unit_lines: int = 400
    wave_review: bool = False
    """``[review] wave = true`` (with a review command): merged waves are reviewed whole."""


def reasons(
    view: SliceView,
    state: VerifyState,
    rules: ShipRules,
    trunk: TrunkGates,
    unit_lines: dict[str, int | None] | None = None,
    waves: WaveReviewState | None = None,
) -> list[str]:
    """Every reason the slice is not shipped, in words (empty: it ships).

    ``trunk`` is what the gates say about trunk at the close; ``unit_lines`` maps a done
    unit to the lines its change touched (``None``: not measured); ``None`` for the whole
    map leaves size out of the judgement."""
    out: list[str] = []
    summary = settled_summary(view)
    for how in ("failed", "lost", "blocked"):
        for unit in summary[how]:
            out.append(f"unit {unit} ended {how}, not done")
    if view.boot is None:
        out.append("the increment's boot check has no result")
    elif view.boot.outcome != "pass":
        detail = f": {view.boot.detail}" if view.boot.detail else ""
        out.append(f"the increment did not boot ({view.boot.outcome}{detail})")
    out.extend(trunk_green.reasons(view, trunk))
    for unit, lines in sorted((unit_lines or {}).items()):
        if lines is None:
            out.append(f"unit {unit}: the size of its change was not measured")
        elif lines > rules.max_unit_lines:
            out.append(
                f"unit {unit} changed {lines} lines, over the bound of {rules.max_unit_lines} "
                "([ship] max_unit_lines)"
            )
    for unit in summary["done"]:
        graded = state.reviewed.get(unit, [])
        if not graded:
            out.append(f"reviewer of {unit}: no axis was scored")
        else:
            out.extend(below_floor(graded, rules.floors, f"reviewer of {unit}"))
    if rules.wave_review:
        out.extend(wave_review.ship_reasons(waves or wave_review.initial(), view))
    if not rules.verify:
        out.append("no [verify] command: nothing was verified code-cold and nothing scored")
        return out
    out.extend(_verification(view, state, rules))
    return out


def _verification(view: SliceView, state: VerifyState, rules: ShipRules) -> list[str]:
    out: list[str] = []
    runs = {run.wave: run for run in verify.recorded(state, view.accepted)}
    scores: list[AxisScore] = []
    merged = verify.merged_waves(view)
    for wave in merged:
        run = runs.get(wave)
        if run is None:
            out.append(f"wave {wave} was never verified")
            continue
        if run.error:
            out.append(f"wave {wave}: the verifier could not verify it: {run.error}")
            continue
        for what in run.unreached:
            out.append(f"wave {wave}: the verifier could not reach {what}")
        scores.extend(run.scores)
    for found in sorted(state.findings.values(), key=lambda f: f.id):
        if found.accepted == view.accepted and found.status != "resolved":
            out.append(
                f"verifier finding {found.id} (wave {found.wave}) is {found.status}: "
                f"{found.message}"
            )
    if merged:
        out.extend(below_floor(scores, rules.floors, "verifier"))
    return out
