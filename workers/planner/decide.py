"""The planner daemon's decision. Pure: no I/O, no clock.

For a project whose charter runs (approved, not met, no budget ended), the decision asks
for the next slice when nothing is open and the charter's criteria were checked on trunk's
current head (so a met charter is never planned past): reconnaissance first when it has
not run for this charter or a blocked-by-fact finding says one of its facts is false; no
build slice while a closed skeleton slice waits for the operator's approval; at most
``max_tries`` tries a round, then one ``planner-gave-up`` finding; at most
``max_run_tries`` answers and ``max_recon_runs`` reconnaissance runs a run, then one
``planning-capped`` finding and nothing more. Running the commands is
the shell's (:mod:`.daemon`); what the planner is told is :mod:`.brief`, and judging its
answer and turning it into facts :mod:`.answer`.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from projections import charter as charter_fold
from projections import decisions as decisions_fold
from projections import findings as findings_fold
from projections import lessons as lessons_fold
from projections import planner as planner_fold
from projections import slices as slices_fold
from projections.intents import Publish
from projections.planner import PlannerState, Proposal
from projections.slices import SlicesState
from schemas import FindingRaised
from schemas.ids import answer_id
from schemas.planning import CAPPED, GAVE_UP, SKELETON_REVIEW, ReconBrief
from schemas.targets import PlanTarget, RecordTarget
from workers.kernel import World
from workers.planner.answer import submission
from workers.planner.brief import invalidation, plan_brief
from workers.planner.effects import PlannerIntent, PlanSlice, Reconnoitre

FOLDS = (
    charter_fold.FOLD,
    slices_fold.FOLD,
    findings_fold.FOLD,
    decisions_fold.FOLD,
    planner_fold.FOLD,
    lessons_fold.FOLD,
)
"""What the planner daemon folds."""


@dataclass(frozen=True)
class Options:
    """What a project's ``loopbus.toml`` says about planning."""

    max_tries: int = 3
    recon: bool = False
    max_run_tries: int = 30
    """The planner's answers a run may take, every round together (``[plan]``)."""
    max_recon_runs: int = 5
    """The reconnaissance runs a run may take (``[recon] max_runs``)."""


def trunk_key(project: str) -> str:
    """The observation holding trunk's head commit for ``project`` (the shell's sensor)."""
    return f"trunk:{project}"


# -- the decision ---------------------------------------------------------------------------


def decide(world: World, options: Options) -> list[PlannerIntent]:
    run = world.state(charter_fold.FOLD.name)
    state: PlannerState = world.state(planner_fold.FOLD.name)
    slices: SlicesState = world.state(slices_fold.FOLD.name)
    if run.charter is None or not charter_fold.planning_allowed(run) or not state.basis:
        return []
    charter = run.charter
    intents: list[PlannerIntent] = list(skeleton_reviews(world, state, slices))
    if planner_fold.capped(state):
        return intents  # the run's allowance is spent until the operator closes the finding
    if options.recon and (
        state.recon is None or state.recon.charter != charter.id or planner_fold.stale_recon(state)
    ):
        if state.recon_runs >= options.max_recon_runs:
            why = f"reconnaissance ran {state.recon_runs} times ([recon] max_runs = "
            return [*intents, Publish(capped(world, state, why + f"{options.max_recon_runs})"))]
        stale = planner_fold.stale_recon(state) if state.recon is not None else []
        recon_brief = ReconBrief(
            project=world.project,
            charter=msgspec.to_builtins(charter),
            previous=list(state.recon.facts) if state.recon is not None else [],
            invalidated=[invalidation(found) for found in stale],
        )
        # Keyed by the run and what it answers, not the round: a plan discarded meanwhile
        # starts a new round but asks for the same reconnaissance.
        recon = Reconnoitre(
            project=world.project, brief=recon_brief, basis=run.run, charter=charter.id
        )
        return [*intents, recon]
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
    if state.run_tries >= options.max_run_tries:
        why = f"the planner answered {state.run_tries} times ([plan] max_run_tries = "
        return [*intents, Publish(capped(world, state, why + f"{options.max_run_tries})"))]
    attempt = planner_fold.next_attempt(state, slice_id)
    brief = plan_brief(world, state, slices, slice_id, attempt, skeleton_allowed=not run.slices)
    effect = PlanSlice(
        project=world.project,
        brief=brief,
        basis=state.basis,
        charter=charter.id,
        autonomy=charter.autonomy,
    )
    return [*intents, effect]


def next_slice(slices: SlicesState) -> str:
    """``S1``, ``S2`` …: the first not accepted (a discarded one is planned again)."""
    return planner_fold.next_slice({k: v.status for k, v in slices.slices.items()})


def awaiting_skeleton(state: PlannerState, slices: SlicesState) -> bool:
    """A closed skeleton slice the operator has not approved holds every build slice."""
    return any(
        view.status == "closed" and view.plan.skeleton and slice_id not in state.skeleton_approved
        for slice_id, view in slices.slices.items()
    )


def skeleton_reviews(world: World, state: PlannerState, slices: SlicesState) -> list[PlannerIntent]:
    """One finding per closed skeleton slice, asking the operator to review it."""
    out: list[PlannerIntent] = []
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


def submit(world: World, proposal: Proposal) -> list[PlannerIntent]:
    """The submission of a proposal, once it may go (full autonomy, or approved)."""
    if proposal.submitted or (proposal.autonomy != "full" and proposal.approved is None):
        return []
    return [Publish(submission(world.project, proposal.id, proposal.plan, world.now))]


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


def capped(world: World, state: PlannerState, why: str) -> FindingRaised:
    """The one finding that ends a run's planning allowance (one per allowance)."""
    return FindingRaised(
        id=answer_id(state.run_basis, CAPPED),
        project=world.project,
        actor=world.actor,
        at=world.now,
        producer="standards",
        target=RecordTarget(id=state.run_basis),
        severity="high",
        criterion=CAPPED,
        cls="meta",
        message=f"planning stopped for this run: {why}, the run's cap; blocked-by-fact "
        "findings or refused plans keep asking for more. Fix what they say, then resolve this "
        "finding to give the run a new allowance",
        evidence={"basis": state.run_basis, "tries": state.run_tries, "recon": state.recon_runs},
        owner="operator",
    )
