"""The planner daemon's decision, and what the planner's answer becomes. Pure: no I/O, no
clock.

For a project whose charter runs (approved, not met, no budget ended), the decision asks
for the next slice when nothing is open and the charter's criteria were checked on trunk's
current head (so a met charter is never planned past): reconnaissance first when it has
not run for this charter or a blocked-by-fact finding says one of its facts is false; no
build slice while a closed skeleton slice waits for the operator's approval; at most
``max_tries`` tries a round, then one ``planner-gave-up`` finding. Running the commands is
the shell's (:mod:`.daemon`); judging an answer is :func:`plan_problems` and turning it
into facts :func:`answer`, both here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec
from loopbus.projections import charter as charter_fold
from loopbus.projections import decisions as decisions_fold
from loopbus.projections import findings as findings_fold
from loopbus.projections import planner as planner_fold
from loopbus.projections import slices as slices_fold
from loopbus.projections.errors import PlanInvalid
from loopbus.projections.intents import Effect, Intent, Publish, PublishBatch
from loopbus.projections.planner import PlannerState, Proposal, submission_id
from loopbus.projections.planning import parse_plan, validate
from loopbus.projections.slices import SlicesState
from loopbus.schemas import Actor, Event, FindingRaised, InvalidEvent, decode_event, encode_event
from loopbus.schemas.ids import answer_id
from loopbus.schemas.limits import bounded, oversize
from loopbus.schemas.planning import (
    GAVE_UP,
    SKELETON_REVIEW,
    BriefDecision,
    BriefFinding,
    BriefSlice,
    PlanAttemptRefused,
    PlanBrief,
    PlannerEnvelope,
    PlanProposed,
    ReconBrief,
)
from loopbus.schemas.slices import PlanSubmission, SlicePlan
from loopbus.schemas.targets import PlanTarget
from loopbus.workers.kernel import World

PLAN = "plan"
RECON = "recon"
PRINCIPAL = "planner"
"""The principal the daemon submits the planner's plans under (role ``planner``): the
plan is the planner's claim, which the dispatcher judges like any other."""
PLANNER_ROLE_CLASSES = frozenset({"blocked-by-fact", "contract-wrong"})
"""Finding classes that are the planner's to answer whoever owns them."""
MAX_BRIEF_FINDINGS = 50
MAX_RECORD_LINES = 50


FOLDS = (
    charter_fold.FOLD,
    slices_fold.FOLD,
    findings_fold.FOLD,
    decisions_fold.FOLD,
    planner_fold.FOLD,
)
"""What the planner daemon folds."""


@dataclass(frozen=True)
class Options:
    """What a project's ``loopbus.toml`` says about planning."""

    max_tries: int = 3
    recon: bool = False


def trunk_key(project: str) -> str:
    """The observation holding trunk's head commit for ``project`` (the shell's sensor)."""
    return f"trunk:{project}"


# -- the decision ---------------------------------------------------------------------------


def decide(world: World, options: Options) -> list[Intent]:
    run = world.state(charter_fold.FOLD.name)
    state: PlannerState = world.state(planner_fold.FOLD.name)
    slices: SlicesState = world.state(slices_fold.FOLD.name)
    if run.charter is None or not charter_fold.planning_allowed(run) or not state.basis:
        return []
    charter = run.charter
    intents: list[Intent] = list(skeleton_reviews(world, state, slices))
    if options.recon and (
        state.recon is None or state.recon.charter != charter.id or planner_fold.stale_recon(state)
    ):
        stale = planner_fold.stale_recon(state) if state.recon is not None else []
        recon_brief = ReconBrief(
            project=world.project,
            charter=msgspec.to_builtins(charter),
            previous=list(state.recon.facts) if state.recon is not None else [],
            invalidated=[_invalidation(found) for found in stale],
        )
        # Keyed by the run and what it answers, not the round: a plan discarded meanwhile
        # starts a new round but asks for the same reconnaissance.
        key = f"{RECON}:{run.run}:{','.join(sorted(f.finding for f in stale))}"
        recon_args = {"brief": recon_brief, "basis": run.run, "charter": charter.id}
        return [*intents, Effect(key, world.project, RECON, recon_args)]
    if any(view.status == "open" for view in slices.slices.values()):
        return intents  # one slice at a time: the next is planned once this one closes
    head = world.outside.get(trunk_key(world.project))
    if not head or run.criteria_trunk != head:
        return intents  # the criteria are not judged on trunk's head yet
    if awaiting_skeleton(state, slices):
        return intents
    slice_id = next_slice(slices)
    proposal = state.proposals.get(slice_id)
    if proposal is not None:
        return [*intents, *submit(world, proposal)]
    if len(planner_fold.tries(state, slice_id)) >= options.max_tries:
        if not planner_fold.gave_up(state):
            intents.append(Publish(gave_up(world, state, slice_id, options.max_tries)))
        return intents
    attempt = planner_fold.next_attempt(state, slice_id)
    brief = plan_brief(world, state, slices, slice_id, attempt, skeleton_allowed=not run.slices)
    args = {
        "brief": brief,
        "basis": state.basis,
        "charter": charter.id,
        "autonomy": charter.autonomy,
    }
    key = f"{PLAN}:{state.basis}:{slice_id}:{attempt}"
    return [*intents, Effect(key, world.project, PLAN, args)]


def next_slice(slices: SlicesState) -> str:
    """``S1``, ``S2`` …: the first not accepted (a discarded one is planned again)."""
    k = 1
    while (view := slices.slices.get(f"S{k}")) is not None and view.status != "discarded":
        k += 1
    return f"S{k}"


def awaiting_skeleton(state: PlannerState, slices: SlicesState) -> bool:
    """A closed skeleton slice the operator has not approved holds every build slice."""
    return any(
        view.status == "closed" and view.plan.skeleton and slice_id not in state.skeleton_approved
        for slice_id, view in slices.slices.items()
    )


def skeleton_reviews(world: World, state: PlannerState, slices: SlicesState) -> list[Intent]:
    """One finding per closed skeleton slice, asking the operator to review it."""
    out: list[Intent] = []
    for slice_id, view in sorted(slices.slices.items()):
        if view.status != "closed" or not view.plan.skeleton:
            continue
        if slice_id in state.skeleton_approved or slice_id in state.skeleton_reviews:
            continue
        out.append(
            Publish(
                FindingRaised(
                    id=answer_id(view.accepted, SKELETON_REVIEW),
                    project=world.project,
                    actor=world.actor,
                    at=world.now,
                    producer="standards",
                    target=PlanTarget(slice=slice_id),
                    severity="medium",
                    criterion=SKELETON_REVIEW,
                    cls="meta",
                    message=f"skeleton slice {slice_id} closed: review it, then `loopbus "
                    f"approve --skeleton {slice_id} --why …`; no build slice is planned "
                    "before that",
                    evidence={"slice": slice_id, "accepted": view.accepted},
                    slice=slice_id,
                    owner="operator",
                )
            )
        )
    return out


def submit(world: World, proposal: Proposal) -> list[Intent]:
    """The submission of a proposal, once it may go (full autonomy, or approved)."""
    if proposal.submitted or (proposal.autonomy != "full" and proposal.approved is None):
        return []
    return [Publish(submission(world.project, proposal.id, proposal.plan, world.now))]


def submission(project: str, proposal: str, plan: SlicePlan, now: datetime) -> PlanSubmission:
    return PlanSubmission(
        id=submission_id(proposal),
        project=project,
        actor=Actor(role="planner", principal=PRINCIPAL),
        at=now,
        plan=plan,
    )


def gave_up(world: World, state: PlannerState, slice_id: str, max_tries: int) -> FindingRaised:
    reasons = planner_fold.refusals(state, slice_id)
    return FindingRaised(
        id=answer_id(state.basis, f"{GAVE_UP}:{slice_id}"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        producer="standards",
        target=PlanTarget(slice=slice_id),
        severity="high",
        criterion=GAVE_UP,
        cls="meta",
        message=f"the planner gave no valid plan for slice {slice_id} in {max_tries} tries; "
        f"last refusal: {reasons[-1] if reasons else 'none'}; fix the planner or plan it by "
        "hand (`loopbus plan submit`), then resolve this finding to let the planner try again",
        evidence={"basis": state.basis, "refusals": reasons[-20:]},
        slice=slice_id,
        owner="operator",
    )


# -- the brief --------------------------------------------------------------------------------


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
        lessons=[],  # loopbus records no lessons yet
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


def _invalidation(found: planner_fold.Invalidation) -> BriefFinding:
    return BriefFinding(
        id=found.finding,
        cls="blocked-by-fact",
        target=found.target,
        message=found.message,
        fact=found.fact,
    )


# -- the answer -------------------------------------------------------------------------------

_envelope = msgspec.json.Decoder(PlannerEnvelope)


def parse_answer(stdout: bytes) -> tuple[SlicePlan, str] | list[str]:
    """The planner's answer as a plan and its summary, or the problems with it.

    Read, in order: the envelope ``{"plan": {...}, "summary": "..."}``; a plan as JSON
    (``{"slice": ..., "unit": [...]}``); a plan as TOML — the texts ``loopbus plan check``
    takes."""
    text = stdout.decode("utf-8", "replace").strip()
    if not text:
        return ["the planner printed nothing; print a plan (docs/planning.md)"]
    summary = ""
    plan_text, fmt = text, "toml"
    if text.startswith("{"):
        fmt = "json"
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            return [f"not valid JSON: {exc}"]
        if isinstance(doc, dict) and "plan" in doc:
            try:
                envelope = _envelope.decode(text)
            except msgspec.ValidationError as exc:
                return [f"the planner's envelope does not validate: {exc}"]
            plan_text, summary = json.dumps(envelope.plan), envelope.summary
    try:
        return parse_plan(plan_text, fmt), summary
    except PlanInvalid as exc:
        return list(exc.problems)


def plan_problems(
    plan: SlicePlan,
    slice_id: str,
    pending: list[str] | None,
    *,
    skeleton_allowed: bool,
    used_units: list[str] | tuple[str, ...] = (),
) -> list[str]:
    """Every reason to refuse the planner's plan: the checks of ``loopbus plan check``
    (with trunk's pending criteria), and that it plans the slice asked for, plans something,
    and is a skeleton only where one may be."""
    problems: list[str] = []
    if plan.slice != slice_id:
        problems.append(
            f"slice.id={plan.slice!r}: the slice to plan is {slice_id}; plan that one, not another"
        )
    if not plan.units:
        problems.append("the plan has no units: plan at least one [[unit]]")
    if plan.skeleton and not skeleton_allowed:
        problems.append(
            "slice.skeleton=true: only a charter's first slice may be a skeleton; plan a "
            "build slice"
        )
    used = set(used_units)
    for unit in plan.units:
        if unit.id in used:
            problems.append(
                f"unit {unit.id} is used by an earlier slice; unit ids are unique within a "
                "project (the brief lists used_units)"
            )
    problems.extend(validate(plan, pending))
    return problems


def answer(
    project: str,
    args: dict[str, Any],
    outcome: tuple[SlicePlan, str] | list[str],
    *,
    actor: Actor,
    now: datetime,
) -> Intent:
    """What the try becomes: refused with its problems, or proposed (and, at full
    autonomy, submitted in the same atomic batch)."""
    brief: PlanBrief = args["brief"]
    basis: str = args["basis"]
    common: dict[str, Any] = {
        "id": answer_id(basis, f"plan:{brief.slice}:{brief.attempt}"),
        "project": project,
        "actor": actor,
        "at": now,
        "slice": brief.slice,
        "charter": args["charter"],
        "attempt": brief.attempt,
        "basis": basis,
    }
    if isinstance(outcome, list):
        return Publish(PlanAttemptRefused(**common, problems=[bounded(p) for p in outcome[:50]]))
    plan, summary = outcome
    full = args["autonomy"] == "full"
    proposed = PlanProposed(
        **common,
        plan=plan,
        skeleton=plan.skeleton,
        summary=summary[:2000],
        autonomy=args["autonomy"],
        submission=submission_id(common["id"]) if full else "",
    )
    # An answer the log would refuse (a text over the limit, an event over a megabyte) is
    # a refused try, never an effect that fails and is performed again for ever.
    why = unrecordable(proposed)
    if why is not None:
        problem = f"the plan cannot be recorded on the log: {why}"
        return Publish(PlanAttemptRefused(**common, problems=[bounded(problem)]))
    if not full:
        return Publish(proposed)
    return PublishBatch((proposed, submission(project, proposed.id, plan, now)))


def unrecordable(event: Event) -> str | None:
    """Why the log would refuse ``event`` (readers decode with limits its constructor does
    not apply), or ``None``."""
    try:
        payload = encode_event(event)
        too_big = oversize(payload)
        if too_big is not None:
            return too_big
        decode_event(payload)
    except InvalidEvent as exc:
        return bounded(str(exc))
    return None
