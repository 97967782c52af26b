"""The gate runner's decision: which asks to run now, which refusals to report, and whether
trunk's commit needs asking for. Pure, over the ``gate_work`` fold and what the trunk
sensor saw.

An *ask* is an event that wants a suite: a unit's accepted commit (the units daemon's
``UnitTransitioned`` with ``by="commit"``; the claim is validated there first, so a refused
claim costs no gate run) or a :class:`GateRunRequested` from anyone. The fold keeps the
asks no verified suite answers yet, a unit's newer commit superseding its older ones, so a
restarted runner runs exactly what is left and, for a unit, only its latest commit.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from projections import gates, ratchet
from projections.base import Fold
from projections.intents import Publish
from schemas import Event, FindingRaised, UnitPlanned, UnitTransitioned
from schemas.authority import REFUSAL_CLASS
from schemas.charter import CharterApproved
from schemas.gates import GateRunRequested, GateSuiteCompleted
from schemas.ids import answer_id
from schemas.slices import SlicePlanAccepted, SlicePlanDiscarded, UnitDispatched
from schemas.targets import RecordTarget
from workers.gate_runner.effects import RUN, GateRunnerIntent, Job, RunSuite
from workers.gates.unitgate import UnitScope
from workers.kernel import World
from workers.leases.decide import Item, Policy, claim

TRUNK = "gate_runner.trunk"
"""The observation of the trunk sensor (a :class:`TrunkSeen`)."""


class Planned(msgspec.Struct):
    """A unit as the plan and the dispatcher's facts have it (what its scope is read from)."""

    files: list[str] = []
    criteria: list[str] = []
    base: str | None = None
    slice: str = ""


class GateWork(msgspec.Struct):
    """The ``gates`` projection, the asks it does not answer yet (in log order), and the
    planned units (their files, criteria and dispatch base)."""

    gates: gates.GatesState = msgspec.field(default_factory=gates.initial)
    asks: dict[str, Job] = {}
    units: dict[str, Planned] = {}
    charter_tests: list[str] = []
    """The test criteria of the charter in force: their files are frozen for every unit
    (a unit cannot write or change what decides the run is met, nor a fixture beside it)
    but a skeleton slice's, whose tests the operator reviews before anything is built."""
    skeletons: list[str] = []
    """Skeleton slices accepted."""


def scope_of(state: GateWork, unit: str) -> UnitScope:
    """The unit's scope from the system's plan and dispatch facts (folds skip forgeries)."""
    planned = state.units.get(unit, Planned())
    charter = set() if planned.slice in state.skeletons else set(state.charter_tests)
    everyone = sorted({c for view in state.units.values() for c in view.criteria} | charter)
    return UnitScope(
        files=tuple(planned.files),
        criteria=tuple(planned.criteria),
        all_criteria=tuple(everyone),
        base=planned.base,
    )


def trigger(event: Event, state: GateWork | None = None) -> Job | None:
    """The job an event asks for, if it asks for one."""
    match event:
        case UnitTransitioned(by="commit", commit=str(commit)):
            scope = scope_of(state, event.unit) if state is not None else None
            return Job(cause=event.id, commit=commit, unit=event.unit, reason="unit", scope=scope)
        case GateRunRequested():
            return Job(
                cause=event.id,
                commit=event.commit,
                unit=event.unit,
                reason=event.reason,
                checks=tuple(event.checks),
                force=event.force,
            )
    return None


def apply(state: GateWork, event: Event) -> GateWork:
    gates.apply(state.gates, event)
    match event:
        case UnitPlanned():
            planned = state.units.setdefault(event.unit, Planned())
            planned.files, planned.criteria = list(event.files), list(event.criteria)
            planned.slice = event.slice
        case UnitDispatched(base=base):
            state.units.setdefault(event.unit, Planned()).base = base
        case CharterApproved():
            state.charter_tests = [c.test for c in event.charter.criteria if c.test]
        case SlicePlanAccepted(plan=plan):
            # A slice id planned again after a discard is whatever its latest plan says.
            if plan.skeleton and plan.slice not in state.skeletons:
                state.skeletons.append(plan.slice)
            elif not plan.skeleton and plan.slice in state.skeletons:
                state.skeletons.remove(plan.slice)
        case SlicePlanDiscarded(slice=discarded) if discarded in state.skeletons:
            state.skeletons.remove(discarded)
    job = trigger(event, state)
    if job is not None and not gates.is_answered(state.gates, job.cause):
        if job.unit is not None and job.reason == "unit":
            # A unit's newer commit supersedes its older unanswered ones.
            for cause, old in list(state.asks.items()):
                if old.unit == job.unit and old.reason == "unit":
                    del state.asks[cause]
        state.asks[job.cause] = job
    match event:
        case GateSuiteCompleted(cause=str(cause)) if gates.is_answered(state.gates, cause):
            state.asks.pop(cause, None)  # verified only: a forged suite answers none
    return state


FOLD = Fold(name="gate_work", state_type=GateWork, initial=GateWork, apply=apply)


@dataclass(frozen=True)
class TrunkSeen:
    """A commit the trunk ref pointed at, and the id a request for it would take (minted by
    the sensor, so asking again for the same sighting is stored once)."""

    commit: str
    ask: str


def decide(world: World, jobs: int, lease: Policy | None = None) -> list[GateRunnerIntent]:
    """Report every refused gate event once; ask for trunk's new commit; run up to ``jobs``
    suites at once, oldest ask first. With a lease ``Policy`` (replicas of the runner
    share the project), an ask is run only under this replica's lease on it, so each ask
    is run by one replica (see :mod:`workers.leases`)."""
    work: GateWork = world.state(FOLD.name)
    intents: list[GateRunnerIntent] = [
        Publish(refusal_finding(world, refusal))
        for refusal in gates.unreported_refusals(work.gates)
    ]
    ask = trunk_ask(world, work)
    if ask is not None:
        intents.append(Publish(ask))
    advisory = ratchet.advisory(world.state(ratchet.FOLD.name))  # what only reports now
    if lease is not None:
        items = [
            Item(
                "gate",
                job.cause,
                f"{job.reason} {job.commit[:12]}" + (f" unit {job.unit}" if job.unit else ""),
                RunSuite(project=world.project, job=job, advisory=advisory),
            )
            for job in work.asks.values()
        ]
        return [*intents, *claim(world, items, lease)]
    free = jobs - sum(1 for key in world.running if key.startswith(f"{RUN}:"))
    for job in work.asks.values():
        effect = RunSuite(project=world.project, job=job, advisory=advisory)
        if free <= 0:
            break
        if effect.key in world.running or effect.key in world.failed:
            continue
        intents.append(effect)
        free -= 1
    return intents


def trunk_ask(world: World, work: GateWork) -> GateRunRequested | None:
    """A trunk request for the commit the sensor saw, unless a suite or an ask for it exists
    (whoever moved trunk: the merger, a revert, an outside push)."""
    seen: TrunkSeen | None = world.outside.get(TRUNK)
    if seen is None or gates.suite_for(work.gates, seen.commit) is not None:
        return None
    if any(job.commit == seen.commit for job in work.asks.values()):
        return None
    return GateRunRequested(
        id=seen.ask,
        project=world.project,
        actor=world.actor,
        at=world.now,
        commit=seen.commit,
        reason="trunk",
    )


def refusal_finding(world: World, refusal: gates.Refusal) -> FindingRaised:
    """The finding a refused gate event (a missing, unknown or forged signature) raises."""
    what = f"check {refusal.check!r}" if refusal.check else refusal.kind
    return FindingRaised(
        id=answer_id(refusal.event, gates.REFUSAL_CRITERION),
        project=world.project,
        actor=world.actor,
        at=world.now,
        producer="gate_runner",
        target=RecordTarget(id=refusal.event),
        severity="high",
        criterion=gates.REFUSAL_CRITERION,
        cls=REFUSAL_CLASS,
        message=f"gate event {refusal.event} ({what}, runner {refusal.runner!r}) refused: "
        f"{refusal.reason}",
        evidence={"refused": refusal.event, "kind": refusal.kind, "reason": refusal.reason},
        owner="standards",
    )
