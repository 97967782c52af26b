"""The dispatcher's decision: pure, over the ``slices`` and ``units`` folds and what the
shell read from the repository (no I/O, no clock, no memory of its own).

For a project that changed it

* plans the units of an accepted plan not yet planned on the log (``UnitPlanned``);
* answers each retryable failure of a dispatched unit with a retry decision, and moves a
  unit whose retry was granted back to work (:mod:`.retries`);
* holds the undispatched dependents of a failed, halted or lost unit, transitively, with
  :func:`projections.claims.hold` (BLOCKED awaiting-dependency naming it), each
  conditional on the unit's subject;
* boots trunk for every slice whose units are all settled (an :class:`Effect`: the
  ``boot`` check run through the gate runner), so that the close can name the result;
* takes the first **step**, one slice fact at a time per project, in this order: discard a
  plan that a misaligned finding was routed to re-slice, or whose contract the merger
  refused (the planner is then asked again with the merger's reasons); answer the oldest plan
  submission; resolve the refusal of a plan whose slice has since had a plan accepted;
  route (or refuse) the oldest open misaligned finding; resolve, route or re-slice for a
  ``blocked-by-fact`` finding (:mod:`.blocked`; the units such a finding reaches are not
  dispatched while it is open); then what
  :func:`projections.slice_dispatch.next_actions` asks for — complete a run-record entry,
  dispatch a unit, close a slice with its boot result;
* with a ``[verify] command``, holds a later wave's dispatches while a merged wave awaits
  the verifier, and a slice's close while a wave does or a verifier finding is open
  (:mod:`projections.verify`); and judges SHIP for each closed slice
  (:class:`schemas.verify.SliceShipJudged`, :mod:`projections.ship`).

No unit is dispatched while the project's charter holds dispatch
(:func:`projections.charter.dispatch_hold`: a charter awaits approval, or its run
ended); plans are still answered and units planned meanwhile.

One step at a time keeps the facts in order (A is dispatched before B) and lets each step
see the one before (a unit id taken by the plan accepted just before, the capacity a
dispatch used). A step that needs the repository — trunk's pending criteria, trunk's
commit, a unit's configured commands and changed files — first asks the shell to read it
(an :class:`Effect`); the shell reports the reading (:func:`reads_name`) and the step is
decided again with it. Every slice fact is conditional on the slice subject as this
decision saw it, so a second dispatcher deciding from a stale view is refused by the
server instead of dispatching twice; every id derives from what it answers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from projections import (
    blocking,
    charter,
    claims,
    contract_landing,
    decisions,
    ship,
    shipping,
    slice_asks,
    slice_dispatch,
    slices,
)
from projections.intents import Publish
from projections.slice_asks import Submission
from projections.slice_dispatch import (
    Action,
    BlockDependent,
    Close,
    Complete,
    Dispatch,
    PlanUnits,
    Retry,
    Revive,
)
from projections.slices import SlicesState, SliceView
from projections.units import UnitsState
from schemas import UnitPlanned
from schemas.ids import answer_id
from schemas.slices import BootResult, SliceClosed, UnitDispatched
from workers.dispatcher import answers, blocked, post_merge, retries
from workers.dispatcher.answers import Criteria
from workers.dispatcher.effects import (
    Boot,
    DispatcherEffect,
    DispatcherIntent,
    ReadCriteria,
    ReadTrunk,
    ReadUnit,
)
from workers.dispatcher.record import UnitReads, completion
from workers.kernel import World

DEFAULT_CAPACITY = 8


@dataclass(frozen=True)
class Options:
    """The dispatcher's configuration, as its decision needs it."""

    capacity: int = DEFAULT_CAPACITY
    paced: bool = True
    """Hold units in flight under the pace the gates keep (:mod:`projections.pacing`)."""
    repos: frozenset[str] = frozenset()
    """Projects that have a repository (the others have every plan refused)."""
    ship_rules: dict[str, ship.ShipRules] = field(default_factory=dict)
    """Per project, what SHIP needs (``[verify]``, ``[ship]``); absent: the defaults."""

    def rules(self, project: str) -> ship.ShipRules:
        return self.ship_rules.get(project) or ship.ShipRules()


@dataclass(frozen=True)
class TrunkRead:
    """Trunk's commit when a unit was about to be dispatched (``None``: unreadable)."""

    commit: str | None


def reads_name(project: str) -> str:
    """The observation holding a project's repository readings, by effect key."""
    return f"dispatcher.reads.{project}"


def boot_name(project: str, accepted: str) -> str:
    """The observation holding the boot result of the slice accepted as ``accepted``."""
    return f"dispatcher.boot.{project}.{accepted}"


def decide(world: World, options: Options) -> list[DispatcherIntent]:
    """The intents the project's state warrants now (see the module's docstring)."""
    state: SlicesState = world.state("slices")
    stopped = blocking.stopped(
        world.state(blocking.FOLD.name), state, world.state(decisions.FOLD.name)
    )
    contracts = contract_state(world)
    rules = options.rules(world.project)

    def held(dispatch: Dispatch) -> bool:
        # A slice whose plan brings contract changes starts no unit until the merger has
        # landed them on trunk (ContractLanded): each unit is dispatched on a trunk that
        # holds its criteria, pending and frozen. A later wave waits for the verification
        # of the wave merged before it.
        return contract_landing.held(contracts, dispatch.slice) or post_merge.dispatch_held(
            world, state, dispatch, rules
        )

    actions = slice_dispatch.next_actions(
        state, options.capacity, frozenset(stopped), paced=options.paced, held=held
    )
    if rules.verify or rules.wave_review:
        actions = post_merge.verification_holds(world, state, actions, rules)
    intents: list[DispatcherIntent] = []
    for action in actions:
        view = state.slices[action.slice]
        match action:
            case PlanUnits():
                intents.extend(plan_units(world, view, action.units))
            case BlockDependent():
                intents.extend(hold(world, view, action))
            case Close() if boot_result(world, options, view) is None:
                intents.append(Boot(project=world.project, accepted=view.accepted))
    for step in _steps(world, options, state, actions):
        if not (isinstance(step, DispatcherEffect) and step.key in world.failed):
            intents.append(step)
            break
    return intents


def _steps(
    world: World, options: Options, state: SlicesState, actions: Sequence[Action]
) -> Iterator[DispatcherIntent]:
    """Every step the state warrants, first first (the caller takes one)."""
    for view in slices.pending_discards(state):
        yield answers.discard(world, state, view)
    for pending in contract_landing.refused(contract_state(world)):
        held_slice = state.slices.get(pending.slice)
        if (
            held_slice is not None
            and held_slice.status == "open"
            and held_slice.accepted == pending.accepted
        ):
            yield answers.contract_discard(world, held_slice, pending)
    for finding, refusal in contract_landing.answered_refusals(contract_state(world)):
        yield Publish(answers.contract_refusal_answered(world, finding, refusal))
    for submission in slice_asks.pending_submissions(state):
        yield answer(world, options, state, submission)
    for refused in slice_asks.answered_refusals(state):
        yield Publish(answers.refusal_answered(world, refused))
    for misaligned in slice_asks.open_misaligned(state):
        yield answers.route_misaligned(world, state, misaligned)
    yield from blocked.steps(world)
    for view in post_merge.unjudged(world, state):
        yield Publish(post_merge.ship_judged(world, options.rules(world.project), state, view))
    for action in actions:
        view = state.slices[action.slice]
        match action:
            case Retry():
                yield retries.decision(world, view, action)
            case Revive():
                yield from retries.revive(world, action)
            case Complete():
                yield complete(world, options, view, action)
            case Dispatch() if not held(world):
                yield dispatch(world, options, view, action)
            case Close():
                boot = boot_result(world, options, view)
                if boot is not None:
                    yield close(world, view, boot)


def held(world: World) -> str:
    """Why nothing may be dispatched now (a charter awaits approval, or its run ended; a
    credential found in trunk's history is not settled yet); ``""`` otherwise."""
    found: shipping.ShippingState | None = world.states.get(shipping.FOLD.name)
    secret = shipping.hold(found) if found is not None else ""
    return secret or charter.dispatch_hold(world.state(charter.FOLD.name))


def contract_state(world: World) -> contract_landing.ContractState:
    """The folded contracts (empty for a world built without that fold)."""
    found: contract_landing.ContractState | None = world.states.get(contract_landing.FOLD.name)
    return found if found is not None else contract_landing.initial()


def reading(world: World, key: str) -> Any:
    """What the shell read for the effect ``key`` (``None``: not read yet)."""
    return world.outside.get(reads_name(world.project), {}).get(key)


def answer(
    world: World, options: Options, state: SlicesState, submission: Submission
) -> DispatcherIntent:
    """Answer a plan submission (trunk's pending criteria read first when there is a
    repository; without one the plan is refused, since they cannot be read)."""
    criteria = answers.no_repository(world.project)
    if world.project in options.repos:
        read = ReadCriteria(project=world.project, submission=submission.id)
        found: Criteria | None = reading(world, read.key)
        if found is None:
            return read
        criteria = found
    return answers.plan_answer(world, state, submission, criteria)


def plan_units(world: World, view: SliceView, unit_ids: list[str]) -> list[DispatcherIntent]:
    by_id = {unit.id: unit for unit in view.plan.units}
    return [
        Publish(
            UnitPlanned(
                id=answer_id(view.accepted, f"unit-planned:{unit_id}"),
                project=world.project,
                actor=world.actor,
                at=world.now,
                unit=unit_id,
                slice=view.slice,
                title=by_id[unit_id].title,
                files=list(by_id[unit_id].files),
                blocked_by=list(by_id[unit_id].blocked_by),
                criteria=list(by_id[unit_id].criteria),
                design_ref=by_id[unit_id].design_ref,
            )
        )
        for unit_id in unit_ids
    ]


def hold(world: World, view: SliceView, action: BlockDependent) -> list[DispatcherIntent]:
    """Hold ``action.unit`` awaiting the failed ``action.failed``, as the transition table
    allows (:func:`projections.claims.hold`); nothing while the unit is not planned
    on the log yet, or when the table refuses the hold."""
    units: UnitsState = world.state("units")
    unit = units.units.get(action.unit)
    if unit is None:
        return []  # its UnitPlanned comes first; the hold is decided once that is folded
    cause = view.units[action.failed].last_event
    move = claims.hold(units, unit, action.failed, cause)
    if isinstance(move, claims.Refusal):
        return []
    return [world.move(move, answer_id(cause or view.accepted, f"hold:{action.unit}"))]


def dispatch(world: World, options: Options, view: SliceView, action: Dispatch) -> DispatcherIntent:
    """Dispatch a unit against trunk's commit (read first when there is a repository)."""
    read = ReadTrunk(
        project=world.project, accepted=view.accepted, unit=action.unit, attempt=action.attempt
    )
    base = None
    if world.project in options.repos:
        trunk: TrunkRead | None = reading(world, read.key)
        if trunk is None:
            return read
        base = trunk.commit
    planned = next(u for u in view.plan.units if u.id == action.unit)
    event = UnitDispatched(
        id=answer_id(view.accepted, f"dispatched:{action.unit}:{action.attempt}"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        slice=view.slice,
        unit=action.unit,
        title=planned.title,
        wave=action.wave,
        sub_wave=action.sub_wave,
        position=action.position,
        attempt=action.attempt,
        files=list(planned.files),
        criteria=list(planned.criteria),
        design_ref=planned.design_ref,
        base=base,
    )
    return world.publish_if(event)


def complete(world: World, options: Options, view: SliceView, action: Complete) -> DispatcherIntent:
    """Complete a unit's run-record entry (its configured commands and changed files read
    first when there is a repository and a head to read them at)."""
    unit = view.units[action.unit]
    if world.project not in options.repos:
        reads = UnitReads(files_unknown=f"no repository is configured for {world.project}")
    elif unit.head is None:
        reads = UnitReads(files_unknown="no base and head commit to compare")
    else:
        read = ReadUnit(
            project=world.project, dispatch=action.dispatch, base=unit.base, head=unit.head
        )
        found: UnitReads | None = reading(world, read.key)
        if found is None:
            return read
        reads = found
    return world.publish_if(completion(world, view, action, reads))


def boot_result(world: World, options: Options, view: SliceView) -> BootResult | None:
    """The boot result the slice closes with (``None``: not booted yet)."""
    if world.project not in options.repos:
        return BootResult(
            outcome="error",
            detail=f"no repository is configured for {world.project}; nothing to boot",
        )
    found: BootResult | None = world.outside.get(boot_name(world.project, view.accepted))
    return found


def close(world: World, view: SliceView, boot: BootResult) -> DispatcherIntent:
    summary = slice_dispatch.settled_summary(view)
    closed = SliceClosed(
        id=answer_id(view.accepted, "slice-closed"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        slice=view.slice,
        boot=boot,
        done=summary["done"],
        failed=summary["failed"],
        lost=summary["lost"],
        blocked=summary["blocked"],
        cause=max((u.last_event for u in view.units.values() if u.last_event), default=None),
    )
    return world.publish_if(closed)
