"""The dispatcher's answers to claims: plan submissions and the operator's misaligned findings.

Pure functions of the ``slices`` fold (and, for a plan, of the pending criteria the shell
read from trunk) that return the one intent an answer warrants. Every refusal is the
machinery speaking: producer ``standards``, actor role ``system``, class
``refused-transition``, owned by whoever must act (the planner for a plan, the operator for
a misaligned finding). Every answer's id derives from what it answers, so a repeat after a
crash, or from a second dispatcher, is stored once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from projections import charter, slices
from projections.charter import RunView
from projections.contract_landing import Pending, Refusal
from projections.intents import Publish, Publishing
from projections.planning import validate
from projections.slice_asks import (
    MISALIGNED_EVIDENCE_KEY,
    REFUSAL_EVIDENCE_KEY,
    Misaligned,
    Submission,
    is_operators,
)
from projections.slices import SlicesState, SliceView
from schemas import FindingRaised, FindingResolved
from schemas.authority import REFUSAL_CLASS
from schemas.findings import Producer
from schemas.ids import answer_id
from schemas.slices import (
    MisalignmentRouted,
    Route,
    SlicePlanAccepted,
    SlicePlanDiscarded,
)
from schemas.targets import PlanTarget, RecordTarget
from workers.kernel import World

REFUSER: Producer = "standards"
"""The producer of every refusal the dispatcher raises: the machinery's own voice. A
refusal is never labelled as if the operator, a planner or the gate runner had raised it."""
PLAN_ROLES = frozenset({"planner", "operator"})


@dataclass(frozen=True)
class Criteria:
    """The pending criteria trunk declares and where they were read (``source``), or, when
    they could not be read, why (``problem``)."""

    pending: list[str] = field(default_factory=list)
    source: str = ""
    problem: str | None = None


def no_repository(project: str) -> Criteria:
    return Criteria(
        problem=f"pending criteria cannot be read: no repository configured for {project}; "
        "run the dispatcher with --repo"
    )


# -- plans --------------------------------------------------------------------------------


def claim_problems(state: SlicesState, submission: Submission) -> list[str]:
    """What is wrong with a submission whatever trunk declares: who sent it, a slice that
    already has a plan, unit ids another slice holds."""
    plan = submission.plan
    problems: list[str] = []
    if submission.role not in PLAN_ROLES:
        problems.append(
            f"submitted by role {submission.role!r}; plans are a planner's (or an operator's) claim"
        )
    existing = state.slices.get(plan.slice)
    if existing is not None and existing.status != "discarded":
        problems.append(
            f"slice {plan.slice} already has an accepted plan ({existing.accepted}); "
            "plan the next slice under a new id"
        )
    for unit in plan.units:
        owner = state.unit_slice.get(unit.id)
        if owner is not None:
            problems.append(
                f"unit {unit.id} already belongs to slice {owner}; unit ids are unique "
                "within a project"
            )
    return problems


def charter_problems(world: World, submission: Submission) -> list[str]:
    """While a charter is in force, a planner's plan stands only if the planner daemon
    proposed it (a ``plan.proposed.v1`` fact names this submission): it alone checks the
    run may plan, keeps the tries bounded and waits for an operator at supervised
    autonomy. Any agent credential may claim as a planner, so without this one could plan
    slices past a met or finalizing run, or past an operator's approval. An operator's
    plan is the operator's call, as before."""
    run: RunView | None = world.states.get(charter.FOLD.name)
    if submission.role != "planner" or run is None or run.charter is None:
        return []
    if submission.id not in run.proposed:
        return [
            f"charter {run.charter.id} is in force: a planner's plan comes through the planner "
            "daemon (no plan.proposed names this submission); an operator may submit one"
        ]
    if run.ended is not None:
        return [f"the run of charter {run.charter.id} has ended ({run.ended}): nothing is planned"]
    return []


def plan_answer(
    world: World, state: SlicesState, submission: Submission, criteria: Criteria
) -> Publishing:
    """Accept the plan (conditionally on its slice subject) or refuse it listing every
    problem. The criteria check is never skipped: criteria that cannot be read refuse the
    plan, and the rest of the check still runs so the refusal lists everything at once."""
    plan = submission.plan
    problems = claim_problems(state, submission)
    problems.extend(charter_problems(world, submission))
    if criteria.problem is not None:
        problems.append(criteria.problem)
    problems.extend(
        validate(plan, _unowned(state, plan.slice, criteria) if criteria.source else None)
    )
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        refusal = FindingRaised(
            id=answer_id(submission.id, "plan-refused"),
            project=world.project,
            actor=world.actor,
            at=world.now,
            producer=REFUSER,
            target=PlanTarget(slice=plan.slice),
            severity="high",
            criterion="plan-valid",
            cls=REFUSAL_CLASS,
            message=f"plan for slice {plan.slice} refused: {problems[0]}{more}",
            evidence={REFUSAL_EVIDENCE_KEY: submission.id, "problems": problems},
            slice=plan.slice,
            owner="planner",
        )
        return Publish(refusal)
    accepted = SlicePlanAccepted(
        id=answer_id(submission.id, "plan-accepted"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        plan=plan,
        cause=submission.id,
        pending=criteria.pending,
        criteria_source=criteria.source,
    )
    return world.publish_if(accepted)


def _unowned(state: SlicesState, slice_id: str, criteria: Criteria) -> list[str]:
    """Trunk's pending criteria the new plan must claim: those no unit of another open
    slice owns. A landed contract's criteria are pending on trunk while their slice runs;
    another slice planned meanwhile is not the one to claim them."""
    owned = {
        criterion
        for view in state.slices.values()
        if view.slice != slice_id and view.status == "open"
        for unit in view.plan.units
        for criterion in unit.criteria
    }
    return [c for c in criteria.pending if c not in owned]


def refusal_answered(world: World, refused: Submission) -> FindingResolved:
    """Resolve the finding that refused ``refused``: a later plan for its slice was
    accepted, so the refusal no longer asks the planner for anything."""
    assert refused.refusal is not None and refused.answered_by is not None
    return FindingResolved(
        id=answer_id(refused.refusal, "plan-refusal-answered"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        finding=refused.refusal,
        why=f"answered: plan {refused.answered_by} accepted for slice {refused.slice}",
    )


# -- misaligned findings ------------------------------------------------------------------


@dataclass(frozen=True)
class _Routed:
    slice: str
    reached: list[str]
    merged: list[str]


def route_misaligned(world: World, state: SlicesState, misaligned: Misaligned) -> Publishing:
    """Route an open misaligned finding where the units its criteria reach say (no reached
    unit merged: a re-slice of the plan it names; some merged: a contract change), or
    refuse it saying why; never to an author."""
    found = _route(state, misaligned)
    if isinstance(found, str):
        return Publish(unroutable(world, misaligned, found))
    route: Route = "contract-change" if found.merged else "re-slice"
    routed = MisalignmentRouted(
        id=answer_id(misaligned.finding, "misaligned-routed"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        slice=found.slice,
        finding=misaligned.finding,
        criteria=misaligned.criteria,
        reached=found.reached,
        merged=found.merged,
        route=route,
        owner="operator" if found.merged else "planner",
    )
    return world.publish_if(routed)


def _route(state: SlicesState, misaligned: Misaligned) -> _Routed | str:
    """Where the finding goes, or why it cannot be routed."""
    if not is_operators(misaligned):
        return (
            f"raised by role {misaligned.role!r} as producer {misaligned.producer!r}; only "
            "the operator's misaligned findings (role and producer operator) are routed"
        )
    criteria = misaligned.criteria
    if not criteria:
        return (
            "it names no criteria; raise it again naming the criteria that changed "
            "(--criterion, or --evidence criteria=a,b)"
        )
    named = misaligned.slice
    if named is not None and named not in state.slices:
        return (
            f"it names slice {named}, which has no accepted plan; raise it again naming "
            "the slice whose increment you do not recognise"
        )
    reached = slices.units_reached(state, criteria, named)
    if not reached:
        where = f"slice {named}" if named is not None else "any slice"
        return (
            f"no unit of {where} claims {', '.join(criteria)}; raise it again naming "
            "criteria the plan's units claim"
        )
    merged = [
        unit_id
        for unit_id in reached
        if (view := slices.view_of(state, unit_id)) is not None
        and view.units[unit_id].state == "done"
    ]
    owners = list(dict.fromkeys(state.unit_slice[unit_id] for unit_id in reached))
    if not merged and named is None:
        # A re-slice discards a plan; only a plan the operator named is ever discarded.
        which = (
            f"slice {owners[0]}'s plan"
            if len(owners) == 1
            else f"a plan, and it reaches slices {', '.join(owners)}"
        )
        return (
            f"none of the units it reaches ({', '.join(reached)}) has merged: a re-slice "
            f"discards {which}; raise it again naming the slice (--slice {owners[0]})"
        )
    return _Routed(named if named is not None else owners[0], reached, merged)


def unroutable(world: World, misaligned: Misaligned, why: str) -> FindingRaised:
    """The refusal to route: the system's finding (never the operator's), for the operator."""
    return FindingRaised(
        id=answer_id(misaligned.finding, "misaligned-refused"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        producer=REFUSER,
        target=RecordTarget(id=misaligned.finding),
        severity="medium",
        criterion="misaligned-route",
        cls=REFUSAL_CLASS,
        message=f"misaligned finding {misaligned.finding} cannot be routed: {why}",
        evidence={MISALIGNED_EVIDENCE_KEY: misaligned.finding},
        slice=misaligned.slice,
        owner="operator",
    )


def discard(world: World, state: SlicesState, view: SliceView) -> Publishing:
    """Discard the plan a misaligned finding was routed to re-slice (the route's sequel)."""
    finding = view.resliced_by
    assert finding is not None  # pending_discards lists only routed slices
    named = state.misaligned.get(finding)
    reached = slices.units_reached(state, named.criteria, view.slice) if named else []
    discarded = SlicePlanDiscarded(
        id=answer_id(finding, "plan-discarded"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        slice=view.slice,
        why=f"misaligned finding {finding}: none of the units its criteria reach "
        f"({', '.join(reached)}) has merged, so the plan is re-sliced",
        cause=finding,
    )
    return world.publish_if(discarded)


def contract_discard(world: World, view: SliceView, pending: Pending) -> Publishing:
    """Discard a plan whose contract the merger refused: its units could never start (they
    would be judged by criteria trunk does not hold), so the slice is planned again, the
    refusal finding carrying the reasons to the planner."""
    assert pending.refused is not None  # contract_landing.refused lists only refused ones
    discarded = SlicePlanDiscarded(
        id=answer_id(pending.refused, "contract-plan-discarded"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        slice=view.slice,
        why=f"the merger refused the contract of slice {view.slice} (finding "
        f"{pending.refused}): the slice is planned again",
        cause=pending.refused,
    )
    return world.publish_if(discarded)


def contract_refusal_answered(world: World, finding: str, refusal: Refusal) -> FindingResolved:
    """The merger's refusal of a contract is moot once a new plan for its slice is
    accepted: resolved, so the planner's brief stops listing it as open."""
    return FindingResolved(
        id=answer_id(finding, "contract-refusal-answered"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        finding=finding,
        why=f"answered: plan {refusal.answered_by} accepted for slice {refusal.slice}",
    )
