"""Turn operators' finding claims (dismiss, resolve, reopen) into facts, or refuse them.

Only an operator settles a finding's lifecycle: a dismissal from anyone else would let
an agent dismiss the gate findings that block it. The claim must fit the finding's
status (a closed finding is reopened, an open one dismissed or resolved); anything else
is refused with a ``refused-transition`` finding naming the claim.
"""

from __future__ import annotations

from projections import lifecycle
from projections.intents import Publish, Publishing
from projections.lifecycle import LifecycleState
from schemas import Actor, FindingRaised, FindingResolved
from schemas.authority import REFUSAL_CLASS
from schemas.ids import answer_id
from schemas.lifecycle import FindingClaim, FindingDismissed, FindingReopened
from schemas.ratchet import GateMoveClaim
from schemas.targets import RecordTarget
from workers.kernel import World

SALT = "finding-lifecycle"


def decide(world: World) -> list[Publishing]:
    state: LifecycleState = world.state(lifecycle.FOLD.name)
    return [answer(world, claim, state) for claim in state.pending.values()]


def answer(world: World, claim: FindingClaim, state: LifecycleState) -> Publishing:
    by = f"{claim.actor.role}:{claim.actor.principal}"
    event_id = answer_id(claim.id, SALT)
    life = state.findings.get(claim.finding)
    problem = None
    if claim.actor.role != "operator":
        problem = f"{claim.action} of a finding is an operator's; {by} may not"
    elif life is None:
        problem = f"no finding {claim.finding} on project {world.project}'s log"
    elif claim.action == "reopen" and life.status == "open":
        problem = f"finding {claim.finding} is open; only a closed finding is reopened"
    elif claim.action != "reopen" and life.status != "open":
        problem = f"finding {claim.finding} is already {life.status}; reopen it first"
    if problem is not None:
        return Publish(refusal(world, claim, problem, event_id))
    assert life is not None
    if claim.action == "dismiss":
        assert claim.reason is not None
        return Publish(
            FindingDismissed(
                id=event_id,
                project=world.project,
                actor=world.actor,
                at=world.now,
                finding=claim.finding,
                reason=claim.reason,
                why=claim.why,
                claim=claim.id,
                by=by,
            )
        )
    if claim.action == "resolve":
        return Publish(
            FindingResolved(
                id=event_id,
                project=world.project,
                actor=world.actor,
                at=world.now,
                finding=claim.finding,
                why=f"resolved by {by}: {claim.why}",
                unit=life.raised.unit,
            )
        )
    return Publish(
        FindingReopened(
            id=event_id,
            project=world.project,
            actor=world.actor,
            at=world.now,
            finding=claim.finding,
            original=life.raised,
            why=claim.why,
            claim=claim.id,
            by=by,
        )
    )


def refusal(
    world: World, claim: FindingClaim | GateMoveClaim, problem: str, event_id: str
) -> FindingRaised:
    """The finding that refuses a claim: the system's, about the claim, for the operator."""
    claim_id = claim.id
    actor: Actor = claim.actor
    return FindingRaised(
        id=event_id,
        project=world.project,
        actor=world.actor,
        at=world.now,
        producer="standards",
        target=RecordTarget(id=claim_id),
        severity="medium",
        criterion="refused-claim",
        cls=REFUSAL_CLASS,
        message=f"refused: {problem}",
        evidence={lifecycle.ANSWERS_CLAIM: claim_id, "claimant": f"{actor.role}:{actor.principal}"},
        owner="operator",
    )
