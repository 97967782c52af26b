"""Durable decisions: operators' records become the system's, and stale ones are named.

Pure over the ``decisions`` and ``blocking`` folds:

* an operator's decision claim is recorded as the system's fact (its id derived from the
  claim, ``claim`` naming it), or refused with a finding naming the claim: only an
  operator records one here, a decision may supersede only a decision in force, and the
  files it bears on are paths inside the repository;
* a decision the system recorded from a claim that cites no live charter objective raises
  a finding for the operator (the ratchet's own settlements serve the ratchet itself);
* a decision that is superseded, or named by a ``blocked-by-fact`` finding, raises a
  ``decision-stale`` finding naming the decision and the fact, with the units and slices
  briefed with it (those dispatched while it was in force and bearing on them).
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from projections import blocking, decisions
from projections.blocking import BlockingState
from projections.decisions import ANSWERS_CLAIM, Decision, DecisionsState
from projections.intents import Publish, Publishing
from schemas import FindingRaised
from schemas.authority import REFUSAL_CLASS
from schemas.decisions import DecisionRecorded
from schemas.ids import answer_id
from schemas.targets import DecisionTarget, RecordTarget, inside_repository
from workers.kernel import World

RECORD_SALT = "decision-record"
STALE_SALT = "decision-stale"


def record_id(claim_id: str) -> str:
    """The id of the system's record of an operator's decision claim (the decision id)."""
    return answer_id(claim_id, RECORD_SALT)


def decide(world: World) -> list[Publishing]:
    state: DecisionsState = world.state(decisions.FOLD.name)
    blocked: BlockingState = world.state(blocking.FOLD.name)
    return [
        *(answer(world, state, claim) for claim in state.pending.values()),
        *no_objective(world, state),
        *stale(world, state, blocked),
    ]


def answer(world: World, state: DecisionsState, claim: DecisionRecorded) -> Publishing:
    problem = None
    prior = state.decisions.get(claim.supersedes or "")
    if claim.actor.role != "operator":
        problem = f"recording a decision is an operator's claim here; {who(claim)} may not"
    elif claim.supersedes is not None and prior is None:
        problem = f"it supersedes {claim.supersedes}, which is no decision on the log"
    elif prior is not None and prior.superseded_by is not None:
        problem = (
            f"it supersedes {claim.supersedes}, already superseded by {prior.superseded_by}; "
            "supersede the decision in force"
        )
    cleaned = [inside_repository(f) for f in claim.files]
    outside = [f for f, c in zip(claim.files, cleaned, strict=True) if c is None]
    if problem is None and outside:
        # The CLI refuses these; an operator's credential can still publish the claim
        # directly, and the system's record would name the path as the repository's file.
        problem = (
            f"file {outside[0]!r} is not a path inside the repository (relative to its "
            "root, without '..')"
        )
    if problem is not None:
        return Publish(_finding(world, claim, problem))
    # Recorded as the repository-relative paths they name (`./src/a.py` as `src/a.py`),
    # which is how the planner matches them against units' files.
    files = [c for c in cleaned if c is not None]
    return Publish(
        msgspec.structs.replace(
            claim,
            id=record_id(claim.id),
            actor=world.actor,
            at=world.now,
            claim=claim.id,
            files=files,
        )
    )


def who(claim: DecisionRecorded) -> str:
    return f"{claim.actor.role}:{claim.actor.principal}"


def _finding(world: World, claim: DecisionRecorded, problem: str) -> FindingRaised:
    return FindingRaised(
        id=answer_id(claim.id, "decision-refused"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        producer="standards",
        target=RecordTarget(id=claim.id),
        severity="medium",
        criterion="refused-claim",
        cls=REFUSAL_CLASS,
        message=f"refused: {problem}",
        evidence={ANSWERS_CLAIM: claim.id, "claimant": who(claim)},
        owner="operator",
    )


def no_objective(world: World, state: DecisionsState) -> Iterator[Publishing]:
    """A finding for every operator's decision in force that cites no live objective."""
    for decision in decisions.in_force(state):
        record = decision.record
        if record.claim is None or decisions.serves_live(state, record):
            continue
        if answer_id(record.id, f"no-objective:{record.serves}") in state.raised:
            continue
        why = (
            f"cites objective {record.serves!r}, which is not live"
            if record.serves
            else ("cites no objective")
        )
        yield Publish(
            FindingRaised(
                id=answer_id(record.id, f"no-objective:{record.serves}"),
                project=world.project,
                actor=world.actor,
                at=world.now,
                producer="standards",
                target=DecisionTarget(decision=record.id),
                severity="medium",
                criterion="decision-serves-objective",
                cls="defect",
                message=f"decision {record.id} ({record.question}) {why}; declare the "
                "objective or supersede the decision",
                evidence={"decision": record.id, "serves": record.serves},
                owner="operator",
            )
        )


def stale(world: World, state: DecisionsState, blocked: BlockingState) -> Iterator[Publishing]:
    """A ``decision-stale`` finding for each fact that invalidates a decision."""
    for decision in state.decisions.values():
        fact = decision.superseded_by
        if fact is not None and stale_id(decision, fact) not in state.raised:
            yield Publish(_stale(world, decision, fact, "superseded by"))
    for found in blocked.findings.values():
        named = state.decisions.get(found.decision or "")
        if named is not None and stale_id(named, found.finding) not in state.raised:
            yield Publish(_stale(world, named, found.finding, "blocked-by-fact finding"))


def stale_id(decision: Decision, fact: str) -> str:
    return answer_id(decision.record.id, f"{STALE_SALT}:{fact}")


def _stale(world: World, decision: Decision, fact: str, how: str) -> FindingRaised:
    record = decision.record
    units = ", ".join(decision.briefed) or "no unit yet"
    return FindingRaised(
        id=stale_id(decision, fact),
        project=world.project,
        actor=world.actor,
        at=world.now,
        producer="standards",
        target=DecisionTarget(decision=record.id),
        severity="high",
        criterion="decision-stale",
        cls="decision-stale",
        message=f"decision {record.id} ({record.question}: {record.chosen}) is stale, "
        f"{how} {fact}; briefed: {units}",
        evidence={
            "decision": record.id,
            "fact": fact,
            "units": list(decision.briefed),
            "slices": list(decision.slices),
        },
        owner="operator",
    )
