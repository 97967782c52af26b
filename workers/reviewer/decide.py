"""The reviewer's decision: the one next thing the log says is owed. Pure: no I/O, no clock.

For one project, in this order (the first step that owes something is the decision):

1. a unit transition owed by a closed round, a refused run or an escalation;
2. a verdict claim not answered yet: accept it (raising its findings, subtracting those
   outside the diff, closing the round) or refuse it with a finding;
3. a red gate suite of a unit not closed as a round yet: close it as a gate round;
4. a ready unit whose ready transition has no review: check the halt guards on its diff,
   choose a reviewer, and publish the request (conditionally, so two daemons cannot both);

and when nothing is owed, 5. run the reviewer command for every open request nobody
answered (effects of the shell, in the background).

Steps 2 to 4 read the unit's diff. The diff is not on the log: the shell reads it (an
``Effect``) and reports it as the ``changes`` observation, and the step is decided again
once it is there. Everything "already done" is read from the folds
(``projections.reviews``), so a daemon killed at any point and restarted decides the
next owed step again, and every fact's id derives from what it answers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence

import msgspec

from projections import lessons
from projections import reviews as rv
from projections.builds import AutoPick
from projections.claims import Move, References, Verdict, escalate, halt, returned
from projections.findings import open_findings
from projections.gates import GatesState, suite_for
from projections.intents import Publish, PublishBatch
from projections.units import UnitView
from schemas.ids import answer_id
from schemas.reviews import ReviewRequested, ReviewVerdict
from workers.agents.config import RepoConfig
from workers.kernel import World
from workers.reviewer.effects import (
    GateResult,
    PickedDecision,
    ReadChange,
    ReviewerIntent,
    RunReview,
)
from workers.reviewer.escalations import escalate_problem, review_input
from workers.reviewer.facts import refusal, unreviewable
from workers.reviewer.guards import Violation, find_frozen_edits, find_secrets
from workers.reviewer.rounds import Round, accept, close_round, gate_round
from workers.reviewer.scene import Change, Scene
from workers.reviewer.verdicts import consistency_problem

TRANSITION_SALT = "review-transition"


def decide(world: World, config: RepoConfig) -> list[ReviewerIntent]:
    """The intents the project's state warrants now (see the module's docstring)."""
    scene = Scene(world, config)
    for intents in _owed(scene):
        if intents:
            return intents
    return [run_review(scene, request) for request in rv.requests_to_run(scene.reviews)]


def _owed(scene: Scene) -> Iterator[list[ReviewerIntent]]:
    reviews = scene.reviews
    for action_id, action in reviews.pending.items():
        yield transition(scene, action_id, action)
    for claim in rv.unanswered_claims(reviews):
        yield judge(scene, claim)
    for suite_id, suite in reviews.suites.items():
        yield gate_suite(scene, suite_id, suite)
    for view in scene.units.units.values():
        if owes_request(reviews, view):
            yield request(scene, view)


# -- 1. the unit transition a fact owes ----------------------------------------------------


def transition(scene: Scene, action_id: str, action: rv.PendingAction) -> list[ReviewerIntent]:
    view = scene.units.units.get(action.unit)
    if view is None or view.state is None:
        return []
    open_ids = frozenset(f.id for f in open_findings(scene.findings, action.unit))
    verdict = owed_move(view, action_id, action, References(open_findings=open_ids))
    if not isinstance(verdict, Move):
        return []  # refused: the unit is no longer where the fact found it
    return [scene.world.move(verdict, answer_id(action_id, TRANSITION_SALT))]


def owed_move(
    view: UnitView, cause: str, action: rv.PendingAction, refs: References
) -> Verdict | None:
    """The move a round, a refusal or an escalation warrants (``None``: none): a review
    that sends the unit back returns it; a halt, or a stop at full oversight, fails it;
    anything else that names a finding escalates the unit to the operator on it."""
    if action.kind == "round" and action.action in ("continue", "promoted"):
        return returned(view, cause)
    fails = action.kind == "round" and (
        action.action == "halted" or (action.action == "stopped" and action.finding is None)
    )
    if fails:
        ended_by = action.ended_by or "halted"
        return halt(view, cause, f"{ended_by}: {action.why}", ended_by=ended_by)
    if action.finding is None:
        return None
    return escalate(view, action.finding, refs, cause)


# -- 2. judging a verdict claim -------------------------------------------------------------


def judge(scene: Scene, claim: ReviewVerdict) -> list[ReviewerIntent]:
    request = scene.reviews.requests.get(claim.request)
    change: Change | None = None
    if request is not None and request.unit == claim.unit:
        found = scene.change(request.head, request.base)
        if isinstance(found, ReadChange):
            return [found]
        if not isinstance(found, Change):
            return []  # the diff cannot be read: this process leaves the claim alone
        change = found
    reason, criterion = _claim_problem(scene, claim, request, change)
    if reason is not None:
        # A refused claim of the assigned reviewer closes its request (the unit then
        # waits on the operator); a stray claim leaves the request and the unit alone.
        closes = None
        if (
            request is not None
            and request.closed_by is None
            and request.unit == claim.unit
            and claim.actor.principal == request.reviewer
        ):
            closes = request.id
        return [PublishBatch(refusal(scene, claim, reason, criterion, closes))]
    assert request is not None and change is not None
    return [PublishBatch(tuple(accept(scene, claim, request, change)))]


def _claim_problem(
    scene: Scene, claim: ReviewVerdict, request: rv.RequestView | None, change: Change | None
) -> tuple[str | None, str]:
    """Why the claim cannot be accepted (``None``: it can), and the criterion it breaks."""
    principal = claim.actor.principal
    identities = change.identities if change is not None else frozenset()
    touched = touched_by([principal], rv.authors_of(scene.reviews, claim.unit), identities)
    if claim.actor.role != "reviewer":
        return (
            f"a verdict must come from a reviewer, not role {claim.actor.role}",
            "verdict-validity",
        )
    if principal in touched:
        return f"self-review: {principal} authored or touched unit {claim.unit}", "no-self-review"
    if request is None or request.unit != claim.unit:
        reason = f"it names no review request of unit {claim.unit} ({claim.request})"
    elif request.closed_by is not None:
        reason = f"request {request.id} was already answered ({request.closed_by})"
    elif principal != request.reviewer:
        reason = f"{principal} is not the reviewer assigned to it ({request.reviewer})"
    elif claim.head != request.head:
        reason = f"it judges {claim.head[:12]} but the review asked for {request.head[:12]}"
    else:
        blocking = scene.config.review.blocking
        problem = consistency_problem(claim.verdict, claim.findings, blocking)
        return problem or escalate_problem(scene, claim, request), "verdict-validity"
    return reason, "verdict-validity"


# -- 3. a red gate suite is a round too -------------------------------------------------------


def gate_suite(scene: Scene, suite_id: str, suite: rv.FailedSuite) -> list[ReviewerIntent]:
    view = scene.units.units.get(suite.unit)
    if suite_id in scene.gates.refused or view is None or view.state not in ("working", "blocked"):
        # an unverified suite measured nothing; a unit that is over has nothing to converge
        return []
    found = scene.change(suite.commit, scene.reviews.bases.get(suite.unit))
    if isinstance(found, ReadChange):
        return [found]
    if not isinstance(found, Change):
        return []
    events = gate_round(scene, suite_id, suite, found, violations(scene, view, found))
    return [PublishBatch(tuple(events))]


# -- 4. a ready unit: guards, reviewer choice, request ------------------------------------------


def owes_request(state: rv.ReviewsState, view: UnitView) -> bool:
    """A ready unit whose ready transition no review (or round) answers yet, and whose head
    is not the one its latest review approved."""
    cause = view.last_event
    return (
        view.state == "working"
        and view.ready
        and cause is not None
        and cause not in state.by_cause
        and view.unit not in state.open
        and (view.head is None or view.head != rv.approved_head(state, view.unit))
    )


def request(scene: Scene, view: UnitView) -> list[ReviewerIntent]:
    unit, cause = view.unit, str(view.last_event)
    if view.head is None:
        why = "the unit is ready but names no head commit to review"
        return [Publish(unreviewable(scene, unit, cause, why))]
    found = scene.change(view.head, scene.reviews.bases.get(unit))
    if isinstance(found, ReadChange):
        return [found]
    if isinstance(found, str):
        return [Publish(unreviewable(scene, unit, cause, f"cannot diff its head: {found}"))]
    if found is None:
        return []
    halts = violations(scene, view, found)
    if halts:
        closing = Round(unit=unit, change=found, cause=cause, source="review", halt=halts)
        return [PublishBatch(tuple(close_round(scene, closing)))]
    roster = scene.config.review.roster
    excluded = touched_by(roster, rv.authors_of(scene.reviews, unit), found.identities)
    reviewer = choose_reviewer(roster, excluded, unit)
    if reviewer is None:
        why = (
            f"no eligible reviewer: every roster principal ({', '.join(roster)}) "
            "authored or touched the unit"
        )
        return [Publish(unreviewable(scene, unit, cause, why))]
    event = ReviewRequested(
        id=answer_id(cause, "review-request"),
        at=scene.now,
        project=scene.project,
        actor=scene.actor,
        unit=unit,
        round=rv.round_count(scene.reviews, unit) + 1,
        head=found.head,
        base=found.base,
        reviewer=reviewer,
        diff_digest=found.diff.digest,
        criteria=list(view.criteria),
        gate_results=len(gate_results(scene.gates, found.head)),
        cause=cause,
    )
    return [scene.world.publish_if(event)]


def violations(scene: Scene, view: UnitView, change: Change) -> list[Violation]:
    """What halts the unit at once: a secret in its diff or an edit to a frozen artifact."""
    all_criteria = [c for u in scene.units.units.values() for c in u.criteria]
    all_criteria += scene.charter_tests(view.slice)
    return find_secrets(change.diff) + find_frozen_edits(
        change.diff,
        all_criteria=all_criteria,
        own_criteria=list(view.criteria),
        frozen_globs=scene.config.review.frozen,
        config_before=change.config_before,
        config_after=change.config_after,
    )


def choose_reviewer(roster: Sequence[str], excluded: set[str], unit: str) -> str | None:
    """The reviewer for ``unit``: the roster minus everyone excluded, in roster order, and
    the unit id's sha256 (as a number, modulo the count) picks one. The same unit gets the
    same reviewer every round as long as the eligible set does not change."""
    eligible = [r for r in roster if r not in excluded]
    if not eligible:
        return None
    index = int(hashlib.sha256(unit.encode()).hexdigest(), 16) % len(eligible)
    return eligible[index]


def touched_by(
    roster: Sequence[str], authors: Sequence[str], identities: frozenset[tuple[str, str]]
) -> set[str]:
    """Roster principals that may not review: the unit's builders and anyone whose git
    identity authored or committed one of its commits."""
    touched = set(authors)
    for principal in roster:
        if any(principal_matches(principal, who) for who in identities):
            touched.add(principal)
    return touched


def principal_matches(principal: str, identity: tuple[str, str]) -> bool:
    """A roster principal names a git identity when it equals (case-insensitively) its
    name, its e-mail address, or the part of the address before ``@``."""
    wanted = principal.strip().lower()
    name, email = (part.strip().lower() for part in identity)
    return wanted in {name, email, email.split("@", 1)[0]} - {""}


# -- 5. running the reviewer command --------------------------------------------------------


def run_review(scene: Scene, request: rv.RequestView) -> RunReview:
    """Ask the shell to run the reviewer command on ``request`` (once per process)."""
    return RunReview(
        project=scene.project,
        request=msgspec.structs.replace(request),  # a copy: the fold mutates its own
        gate_results=gate_results(scene.gates, request.head),
        decisions=[auto_pick_document(pick) for pick in review_input(scene, request)],
        lessons=lessons.in_force(scene.world.state(lessons.FOLD.name)),
    )


def auto_pick_document(pick: AutoPick) -> PickedDecision:
    """One auto-picked decision as the reviewer reads it (``escalate`` names its id)."""
    return PickedDecision(
        decision_id=pick.decision_id,
        question=pick.question,
        options=list(pick.options),
        chosen=pick.chosen,
        autonomy=pick.autonomy,
        confidence=pick.stated_confidence,
        rationale=pick.rationale,
    )


def gate_results(gates: GatesState, head: str) -> list[GateResult]:
    """The verified gate results cached for ``head``: what the reviewer reads instead of
    running anything."""
    suite = suite_for(gates, head)
    if suite is None:
        return []
    by_result = {entry.result: entry for entry in gates.cache.values()}
    out = []
    for item in suite.checks:
        cached = by_result.get(item.result)
        out.append(
            GateResult(
                check=item.check,
                outcome=item.outcome,
                cached=item.cached,
                duration_s=item.duration_s,
                summary=cached.summary if cached is not None else "",
                findings=item.findings,
            )
        )
    return out
