"""The planning brief: everything the planner is told that the log holds — the charter,
reconnaissance, the closed slices and their run records, the findings routed to the
planner, the decisions and lessons in force and this round's refusals (the daemon adds trunk's tree
and pending criteria). Pure: no I/O, no clock.
"""

from __future__ import annotations

import msgspec

from projections import charter as charter_fold
from projections import decisions as decisions_fold
from projections import findings as findings_fold
from projections import lessons as lessons_fold
from projections import planner as planner_fold
from projections import slices as slices_fold
from projections.planner import PlannerState
from projections.slices import SlicesState
from schemas.planning import BriefDecision, BriefFinding, BriefSlice, PlanBrief
from workers.kernel import World

PLANNER_ROLE_CLASSES = frozenset({"blocked-by-fact", "contract-wrong"})
"""Finding classes that are the planner's to answer whoever owns them."""
MAX_BRIEF_FINDINGS = 50
MAX_RECORD_LINES = 50


def plan_brief(
    world: World,
    state: PlannerState,
    slices: SlicesState,
    slice_id: str,
    attempt: int,
    *,
    skeleton_allowed: bool,
) -> PlanBrief:
    """Everything the planner is told that the log holds (the shell adds trunk's tree and
    pending criteria)."""
    run = world.state(charter_fold.FOLD.name)
    recon = state.recon
    return PlanBrief(
        project=world.project,
        slice=slice_id,
        attempt=attempt,
        skeleton_allowed=skeleton_allowed,
        used_units=sorted(slices.unit_slice),
        charter=msgspec.to_builtins(run.charter),
        recon=list(recon.facts) if recon is not None else [],
        recon_error=recon.error if recon is not None else "",
        closed=closed_slices(slices),
        findings=routed_findings(world, state, slices),
        decisions=[
            BriefDecision(
                id=d.record.id,
                question=d.record.question,
                chosen=d.record.chosen,
                why=d.record.rationale,
            )
            for d in decisions_fold.in_force(world.state(decisions_fold.FOLD.name))
        ],
        lessons=lessons_fold.in_force(world.state(lessons_fold.FOLD.name)),
        refusals=planner_fold.refusals(state, slice_id),
    )


def closed_slices(slices: SlicesState) -> list[BriefSlice]:
    out: list[BriefSlice] = []
    for slice_id, view in sorted(slices.slices.items(), key=lambda item: item[1].rank):
        if view.status != "closed":
            continue
        units = view.units.values()
        record = [
            f"{e.unit} (try {e.attempt}): "
            + (
                f"{e.completion.state} {e.completion.summary}".strip()
                if e.completion
                else "no completion"
            )
            for e in slices_fold.record_entries(slices, slice_id)
        ]
        out.append(
            BriefSlice(
                slice=slice_id,
                skeleton=view.plan.skeleton,
                units=[u.id for u in view.plan.units],
                done=sorted(u.unit for u in units if u.state == "done"),
                failed=sorted(u.unit for u in units if u.state in ("failed", "lost")),
                boot=view.boot.outcome if view.boot is not None else "",
                record=record[-MAX_RECORD_LINES:],
            )
        )
    return out


def routed_findings(world: World, state: PlannerState, slices: SlicesState) -> list[BriefFinding]:
    """Open findings the planner answers: those owned by the planner, blocked-by-fact and
    contract-wrong ones, and misaligned ones routed as a re-slice."""
    resliced = {m.finding for m in slices.misaligned.values() if m.route == "re-slice"}
    facts = {f.finding: f.fact for f in state.invalidations.values()}
    found = [
        f
        for f in findings_fold.open_findings(world.state(findings_fold.FOLD.name))
        if f.owner == "planner" or f.cls in PLANNER_ROLE_CLASSES or f.id in resliced
    ]
    return [
        BriefFinding(
            id=f.id, cls=f.cls, target=f.target, message=f.message, fact=facts.get(f.id, "")
        )
        for f in found[-MAX_BRIEF_FINDINGS:]
    ]


def invalidation(found: planner_fold.Invalidation) -> BriefFinding:
    return BriefFinding(
        id=found.finding,
        cls="blocked-by-fact",
        target=found.target,
        message=found.message,
        fact=found.fact,
    )
