"""The dispatcher's answers to ``blocked-by-fact`` findings: route, re-slice, resolve.

Pure functions over the ``slices``, ``decisions`` and ``blocking`` folds. An open finding
is routed once (a :class:`BlockedRouted` fact: to reconnaissance, then the slice planner,
naming the units it reaches, which are not dispatched meanwhile); a finding about a plan
has that plan discarded, so the planner can submit the slice again; a finding answered by
a new plan or a superseding decision is resolved, and its units may be dispatched again.
Every id derives from the finding, so a repeat is stored once.
"""

from __future__ import annotations

from collections.abc import Iterator

from projections import blocking
from projections.blocking import Blocked, BlockingState
from projections.decisions import DecisionsState
from projections.intents import Publish, Publishing
from projections.slices import SlicesState
from schemas import FindingResolved
from schemas.decisions import BlockedRouted
from schemas.ids import answer_id
from schemas.slices import SlicePlanDiscarded
from workers.kernel import World


def steps(world: World) -> Iterator[Publishing]:
    """Every step the blocked-by-fact findings warrant, first first."""
    state: BlockingState = world.state(blocking.FOLD.name)
    slices: SlicesState = world.state("slices")
    decisions: DecisionsState = world.state("decisions")
    for found in blocking.to_resolve(state):
        yield Publish(resolved(world, found))
    for found in blocking.to_route(state):
        yield Publish(routed(world, found, slices, decisions))
    for found in blocking.open_blocks(state):
        view = slices.slices.get(found.slice or "")
        if found.routed and view is not None and view.status == "open":
            yield world.publish_if(
                SlicePlanDiscarded(
                    id=answer_id(found.finding, "blocked-plan-discarded"),
                    project=world.project,
                    actor=world.actor,
                    at=world.now,
                    slice=view.slice,
                    why=f"blocked-by-fact finding {found.finding}: {found.message}; the "
                    "planner amends or re-slices it",
                    cause=found.finding,
                )
            )


def routed(
    world: World, found: Blocked, slices: SlicesState, decisions: DecisionsState
) -> BlockedRouted:
    reached = blocking.reached(found, slices, decisions)
    owners = [slices.unit_slice[u] for u in reached if u in slices.unit_slice]
    named = [found.slice] if found.slice else []
    return BlockedRouted(
        id=answer_id(found.finding, "blocked-routed"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        finding=found.finding,
        slices=list(dict.fromkeys(named + owners)),
        reached=reached,
        decision=found.decision,
    )


def resolved(world: World, found: Blocked) -> FindingResolved:
    what = (
        f"plan {found.answered_by} accepted for slice {found.slice}"
        if found.slice
        else f"decision {found.answered_by} supersedes {found.decision}"
    )
    return FindingResolved(
        id=answer_id(found.finding, "blocked-answered"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        finding=found.finding,
        why=f"answered: {what}",
    )
