"""Settle gate move claims against the ratchet's edges, and run the meta rule.

Three sources of moves, all pure over the folded world:

* a :class:`GateMoveClaim` from anyone, judged by
  :func:`projections.ratchet.settle`: a :class:`GateMoved` with the
  :class:`DecisionRecorded` of the settlement (one atomic batch), or a refusal naming the
  authority it needs and, for a loosening, the dismissal evidence that would justify it;
* the meta rule per gate and project: a tier reached by the gate's false-positive share
  raises a meta-finding and puts a local gate under review (advisory at that tier);
* the catalogue's review count: every N slices that declared a profile's capability,
  across projects, the profile comes due for review (a meta-finding to standards);
* the catalogue's doubts: when the meta rule of ``dismissed_across`` projects raised a
  meta-finding on a profile's checks since its last review, a catalogue-level
  meta-finding to standards, and the profile under review.
"""

from __future__ import annotations

from typing import Any

from projections import lifecycle, ratchet
from projections.intents import PublishBatch, Publishing
from projections.lifecycle import GateTally, LifecycleState
from projections.ratchet import RatchetState, Refused
from schemas import FindingRaised
from schemas.authority import ANSWERS_CLAIM
from schemas.decisions import DecisionRecorded
from schemas.findings import Severity
from schemas.ids import answer_id
from schemas.ratchet import (
    CADENCE_MOVES,
    GateMoveClaim,
    GateMoved,
    GateMoveName,
    GateState,
    Scope,
)
from schemas.targets import CheckTarget, ProfileTarget
from workers.gates.meta import Tier, reached
from workers.gates.profiles import DEFAULT_REVIEW_EVERY
from workers.kernel import World
from workers.ratchet.lifecycle import refusal
from workers.ratchet.policy import Policy

STANDING_OBJECTIVE = "ratchet"
"""The objective every settlement serves: the rules change only by their authority."""


def implicit(world: World, policy: Policy, scope: Scope, gate: str) -> GateState | None:
    """The state of a gate the log never moved: a configured project check is Local, a
    shipped profile (on the catalogue) is Profile."""
    if scope == "local":
        found = policy.configured(world.project).get(gate)
        return "Local" if found is not None and found.origin == "project" else None
    return "Profile" if gate in policy.review_every else None


def measurement(tally: GateTally | None) -> str:
    if tally is None or not tally.raised:
        return "no findings of this gate dismissed yet (none to justify it)"
    return (
        f"{tally.false_positive} of {tally.raised} findings dismissed as false positives "
        f"({tally.false_positive_rate:.0%}), {tally.true_positive} led to a change"
    )


def current_cadence(state: RatchetState, policy: Policy, profile: str) -> int:
    return ratchet.cadence(state, profile, policy.review_every.get(profile, DEFAULT_REVIEW_EVERY))


def cadence_problem(state: RatchetState, policy: Policy, claim: GateMoveClaim) -> str | None:
    """Why a cadence claim goes the wrong way (the move names its direction, and so the
    authority that settles it: a "lower" to a larger N would be a loosening by standards)."""
    if claim.move not in CADENCE_MOVES or claim.every is None:
        return None
    now = current_cadence(state, policy, claim.gate)
    if claim.move == "raise-cadence" and claim.every <= now:
        return (
            f"raise-cadence of profile {claim.gate!r} to {claim.every} does not raise its N "
            f"({now}); a smaller N is lower-cadence, settled by the standards role"
        )
    if claim.move == "lower-cadence" and claim.every >= now:
        return (
            f"lower-cadence of profile {claim.gate!r} to {claim.every} does not lower its N "
            f"({now}); a larger N is raise-cadence, settled by the catalogue operator"
        )
    return None


def decide_claims(world: World, policy: Policy) -> list[Publishing]:
    """An answer to the oldest pending claim of each gate. One per gate per decision: the
    next is judged once this answer is folded (two claims judged against the same state
    could both pass, and together make a move neither could, e.g. two cadence "lowers"
    whose second raises N)."""
    state: RatchetState = world.state(ratchet.FOLD.name)
    tallies = lifecycle.tallies(world.state(lifecycle.FOLD.name))
    answered: set[tuple[str, str]] = set()
    intents: list[Publishing] = []
    for claim in state.pending.values():
        if (claim.scope, claim.gate) in answered:
            continue
        answered.add((claim.scope, claim.gate))
        intents.append(_answer(world, policy, state, tallies, claim))
    return intents


def _answer(
    world: World,
    policy: Policy,
    state: RatchetState,
    tallies: dict[str, GateTally],
    claim: GateMoveClaim,
) -> Publishing:
    wrong_way = cadence_problem(state, policy, claim)
    if wrong_way is not None:
        return PublishBatch((refusal(world, claim, wrong_way, answer_id(claim.id, "ratchet")),))
    verdict = ratchet.settle(
        state,
        claim.scope,
        claim.gate,
        claim.move,
        claim.actor.role,
        claim.actor.principal,
        policy.catalogue_operators,
        measurement(tallies.get(claim.gate)),
        implicit(world, policy, claim.scope, claim.gate),
    )
    if isinstance(verdict, Refused):
        return PublishBatch(
            (refusal(world, claim, verdict.reason, answer_id(claim.id, "ratchet")),)
        )
    by = f"{claim.actor.role}:{claim.actor.principal}"
    evidence: dict[str, Any] = {ANSWERS_CLAIM: claim.id, "why": claim.why}
    if claim.check:
        evidence["check"] = claim.check
    if claim.defect:
        evidence["defect"] = claim.defect
    if claim.move == "draft" and claim.scope == "local":
        evidence["owner"] = "operator"  # a drafted local gate waits on its project operator
    if claim.move in CADENCE_MOVES:
        evidence["every"] = claim.every
        evidence["was"] = current_cadence(state, policy, claim.gate)
    return _moved(
        world,
        claim.gate,
        claim.scope,
        claim.move,
        verdict.source,
        verdict.target,
        claim.id,
        by,
        evidence,
        question=f"should {claim.scope} gate {claim.gate} {claim.move}?",
        rationale=claim.why,
    )


def _moved(
    world: World,
    gate: str,
    scope: Scope,
    move: GateMoveName,
    source: GateState | None,
    target: GateState | None,
    cause: str,
    authority: str,
    evidence: dict[str, Any],
    *,
    question: str,
    rationale: str,
    advisory: bool = False,
    extra: tuple[FindingRaised, ...] = (),
) -> PublishBatch:
    decision = DecisionRecorded(
        id=answer_id(cause, "ratchet-decision"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        question=question,
        options=[move, "no move"],
        chosen=move,
        owner=authority,
        serves=STANDING_OBJECTIVE,
        evidence=[cause],
        rationale=rationale,
    )
    moved = GateMoved(
        id=answer_id(cause, "ratchet"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        gate=gate,
        scope=scope,
        move=move,
        source=source,
        target=target,
        claim=cause,
        authority=authority,
        decision=decision.id,
        advisory=advisory,
        evidence=evidence,
    )
    return PublishBatch((*extra, decision, moved))


def decide_meta(world: World, policy: Policy) -> list[Publishing]:
    """One meta-finding per gate and tier reached (and the gate's review move)."""
    state: RatchetState = world.state(ratchet.FOLD.name)
    life: LifecycleState = world.state(lifecycle.FOLD.name)
    intents: list[Publishing] = []
    for check, tally in sorted(lifecycle.tallies(life).items()):
        configured = policy.configured(world.project).get(check)
        if configured is None:
            continue
        tier = reached(configured.rule, tally.raised, tally.false_positive)
        if tier is None:
            continue
        first = min(f for f, life_ in life.findings.items() if life_.check == check)
        finding_id = answer_id(first, f"meta:{world.project}:{check}:{tier.name}")
        if finding_id in life.findings:
            continue
        intents.append(_meta(world, policy, state, check, tally, tier, finding_id))
    return intents


def _meta(
    world: World,
    policy: Policy,
    state: RatchetState,
    check: str,
    tally: GateTally,
    tier: Tier,
    finding_id: str,
) -> Publishing:
    profile = policy.profile_of(world.project, check)
    owner = "standards" if profile else "operator"
    finding = FindingRaised(
        id=finding_id,
        project=world.project,
        actor=world.actor,
        at=world.now,
        producer="meta_rule",
        target=CheckTarget(check=check),
        severity="high" if tier.action == "advisory" else "medium",
        criterion=f"meta:{tier.name}",
        cls="meta",
        message=f"gate {check}: {measurement(tally)}, above the {tier.above:.0%} tier over "
        f"{tier.over}; proposing a retune"
        + ("; advisory until the review is settled" if tier.action == "advisory" else ""),
        evidence={
            "gate": check,
            "raised": tally.raised,
            "false_positive": tally.false_positive,
            "tier": tier.name,
            **({"profile": profile} if profile else {}),  # the catalogue counts it
        },
        owner=owner,
    )
    if profile is not None:
        return PublishBatch((finding,))  # a profile's review is the catalogue's
    source = ratchet.current(state, "local", check) or implicit(world, policy, "local", check)
    if source not in ("Local", "LocalUnderReview"):
        return PublishBatch((finding,))
    advisory = tier.action == "advisory"
    view = state.gates.get(ratchet.key("local", check))
    if source == "LocalUnderReview" and (not advisory or (view is not None and view.advisory)):
        return PublishBatch((finding,))
    return _moved(
        world,
        check,
        "local",
        "review",
        source,
        "LocalUnderReview",
        finding_id,
        "system:meta_rule",
        {"tier": tier.name},
        question=f"should local gate {check} be reviewed?",
        rationale=finding.message,
        advisory=advisory,
        extra=(finding,),
    )


def decide_reviews(world: World, policy: Policy) -> list[Publishing]:
    """On the catalogue: a review for each profile whose declaring slices reached its N."""
    if world.project != policy.catalogue:
        return []
    state: RatchetState = world.state(ratchet.FOLD.name)
    intents: list[Publishing] = []
    for name, shipped in sorted(policy.review_every.items()):
        every = ratchet.cadence(state, name, shipped)
        source = ratchet.current(state, "profile", name) or "Profile"
        if source != "Profile" or not ratchet.due_for_review(state, name, every):
            continue
        count = state.declared.get(name, 0)
        # The catalogue is in the salt: the declaring slices are every project's, so two
        # catalogues on one server would otherwise derive the same id (and JetStream
        # refuses the second as a duplicate, forever).
        salt = f"profile-review:{world.project}:{name}:{count}"
        cause = answer_id(state.declaring[name][count - 1], salt)
        intents.append(
            _review_profile(
                world,
                name,
                source,
                cause,
                severity="medium",
                criterion="profile-review",
                message=f"profile {name} is due for catalogue review: {count} slices across "
                f"projects have declared it since its last review (every {every})",
                evidence={"declared": count, "every": every},
                measured={"declared": count},
            )
        )
    return intents


def decide_doubts(world: World, policy: Policy) -> list[Publishing]:
    """On the catalogue: a meta-finding for each profile whose checks the meta rule of
    ``dismissed_across`` projects doubted since its last review, and its review move."""
    if world.project != policy.catalogue:
        return []
    state: RatchetState = world.state(ratchet.FOLD.name)
    intents: list[Publishing] = []
    for name, doubt in sorted(state.doubts.items()):
        across = policy.dismissed_across.get(name)
        if across is None or len(doubt.projects) < across:
            continue
        source = ratchet.current(state, "profile", name) or implicit(world, policy, "profile", name)
        if source != "Profile":
            continue  # under review already (its settlement is the answer) or not in force
        count = len(doubt.projects)
        cause = answer_id(doubt.findings[-1], f"profile-dismissed:{world.project}:{name}:{count}")
        intents.append(
            _review_profile(
                world,
                name,
                source,
                cause,
                severity="high",
                criterion="profile-dismissed",
                message=f"profile {name}: its checks are dismissed across {count} projects "
                f"({', '.join(doubt.projects)}), each past a meta tier, at least {across}; "
                "proposing a retune at catalogue review",
                evidence={
                    "projects": list(doubt.projects),
                    "findings": list(doubt.findings),
                    "across": across,
                },
                measured={"projects": count},
            )
        )
    return intents


def _review_profile(
    world: World,
    name: str,
    source: GateState | None,
    cause: str,
    *,
    severity: Severity,
    criterion: str,
    message: str,
    evidence: dict[str, Any],
    measured: dict[str, Any],
) -> PublishBatch:
    """A meta-finding to the standards role about profile ``name``, published with the
    move that puts the profile under catalogue review (the finding is the move's cause)."""
    finding = FindingRaised(
        id=cause,
        project=world.project,
        actor=world.actor,
        at=world.now,
        producer="meta_rule",
        target=ProfileTarget(profile=name),
        severity=severity,
        criterion=criterion,
        cls="meta",
        message=message,
        evidence=evidence,
        owner="standards",
    )
    return _moved(
        world,
        name,
        "profile",
        "review",
        source,
        "ProfileUnderReview",
        cause,
        "system:meta_rule",
        measured,
        question=f"should profile {name} be reviewed?",
        rationale=message,
        extra=(finding,),
    )
