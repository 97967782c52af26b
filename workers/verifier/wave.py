"""The wave review's decision and what its answers become. Pure: no I/O, no clock.

The decision (:func:`decide`) asks for the review of the first merged wave not yet
reviewed, and for the re-review of each unit a wave review re-opened. The shell
(:mod:`.wave_shell`) reads the diffs and runs the ``[review] command``; :func:`reviewed`
and :func:`rereviewed` turn its answers into facts.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from projections import slices as slices_fold
from projections import wave_review as wave_fold
from projections.intents import Effect, PublishBatch
from projections.round_rules import SEVERITY_RANK
from projections.slices import SlicesState
from schemas import Actor, FindingRaised, FindingResolved
from schemas.ids import answer_id
from schemas.limits import bounded
from schemas.reviews import VerdictDocument
from schemas.targets import CodeTarget
from schemas.wave_review import (
    WAVE_REVIEW_CRITERION,
    Trigger,
    UnitReReviewed,
    WaveReviewed,
)
from workers.kernel import World
from workers.verifier.answer import unrecordable
from workers.verifier.effects import ReReviewUnit, ReviewWave, VerifierIntent


def decide(world: World) -> list[VerifierIntent]:
    slices: SlicesState = world.state(slices_fold.FOLD.name)
    state: wave_fold.WaveReviewState = world.state(wave_fold.FOLD.name)
    intents: list[VerifierIntent] = []
    for view in sorted(slices.slices.values(), key=lambda v: v.rank):
        if view.status != "open":
            continue
        owed = wave_fold.to_review(state, view)
        if owed is not None:
            criteria = sorted({c for u in view.plan.units for c in u.criteria})
            intents.append(
                ReviewWave(
                    project=world.project,
                    slice=view.slice,
                    accepted=view.accepted,
                    owed=owed,
                    criteria=criteria,
                )
            )
        for review, unit in wave_fold.rereviews_owed(state, view):
            merge = state.merges.get(unit)
            answers = [
                f.id
                for f in wave_fold.open_findings(state, view.accepted)
                if f.unit == unit and f.wave == review.wave
            ]
            intents.append(
                ReReviewUnit(
                    project=world.project,
                    accepted=view.accepted,
                    review=review,
                    unit=unit,
                    merge=merge.merge if merge else "",
                    base=merge.previous if merge else "",
                    criteria=list(view.units[unit].criteria) if unit in view.units else [],
                    answers=answers,
                    messages=[state.findings[f].message for f in answers],
                )
            )
    return [i for i in intents if not (isinstance(i, Effect) and i.key in world.failed)]


def reviewed(
    project: str,
    args: ReviewWave,
    *,
    axes: list[str],
    triggers: list[Trigger],
    attribution: dict[str, str],
    answer: VerdictDocument | str,
    blocking: str,
    actor: Actor,
    now: datetime,
) -> PublishBatch:
    """The wave review as facts: its blocking findings, each on the unit its file is
    attributed to (that unit is re-opened), then the ``WaveReviewed`` record."""
    owed = args.owed
    base_id = answer_id(args.accepted, f"wave-review:{owed.wave}")
    common: dict[str, Any] = {
        "project": project,
        "actor": actor,
        "at": now,
        "slice": args.slice,
        "accepted": args.accepted,
        "wave": owed.wave,
        "base": owed.base,
        "head": owed.head,
        "axes": axes,
        "triggers": triggers,
        "attribution": attribution,
    }
    if isinstance(answer, str):
        return PublishBatch((WaveReviewed(id=base_id, **common, error=bounded(answer)),))
    floor = SEVERITY_RANK.get(blocking, 0)
    findings: list[FindingRaised] = []
    for i, found in enumerate(answer.findings):
        if SEVERITY_RANK.get(found.severity, 0) < floor:
            continue
        path = found.target.path if isinstance(found.target, CodeTarget) else ""
        unit = attribution.get(path) or None
        findings.append(
            FindingRaised(
                id=answer_id(base_id, f"finding:{i}"),
                project=project,
                actor=actor,
                at=now,
                producer="reviewer",
                target=found.target,
                severity=found.severity,
                criterion=WAVE_REVIEW_CRITERION,
                cls="defect",
                message=bounded(found.message),
                evidence={"accepted": args.accepted, "wave": owed.wave, "file": path},
                unit=unit,
                slice=args.slice,
                owner=f"builder:{unit}" if unit else "operator",
            )
        )
    record = WaveReviewed(
        id=base_id,
        **common,
        verdict=answer.verdict,
        findings=[f.id for f in findings],
        reopened=sorted({f.unit for f in findings if f.unit}),
    )
    batch = PublishBatch((*findings, record))
    why = unrecordable(batch)
    if why is not None:  # recorded as the review's error, never an effect failing for ever
        return PublishBatch((WaveReviewed(id=base_id, **common, error=f"unrecordable: {why}"),))
    return batch


def rereviewed(
    project: str,
    args: ReReviewUnit,
    answer: VerdictDocument | str,
    *,
    actor: Actor,
    now: datetime,
) -> PublishBatch:
    """A re-opened unit's re-review: approved, the wave findings it answers are resolved in
    the same batch; rejected or failed, they stay open."""
    review, unit = args.review, args.unit
    record_id = answer_id(review.id, f"rereview:{unit}")
    common: dict[str, Any] = {
        "id": record_id,
        "project": project,
        "actor": actor,
        "at": now,
        "slice": review.slice,
        "accepted": review.accepted,
        "wave": review.wave,
        "unit": unit,
        "base": args.base,
        "merge": args.merge,
        "answers": list(args.answers),
    }
    if isinstance(answer, str):
        return PublishBatch((UnitReReviewed(**common, error=bounded(answer)),))
    record = UnitReReviewed(**common, verdict=answer.verdict, summary=bounded(answer.summary))
    if unrecordable(PublishBatch((record,))) is not None:
        record = UnitReReviewed(**common, verdict=answer.verdict)
    if answer.verdict != "approve":
        return PublishBatch((record,))
    resolved = tuple(
        FindingResolved(
            id=answer_id(record_id, f"resolved:{finding}"),
            project=project,
            actor=actor,
            at=now,
            finding=finding,
            why=f"the re-review of unit {unit}'s own diff approved it",
            unit=unit,
        )
        for finding in args.answers
    )
    return PublishBatch((record, *resolved))
