"""The merger's decision: pure, over the folded units and merges and what the shell saw.

Each call takes the next step the state calls for; the kernel folds the step's facts back
before it asks again, so steps happen one at a time, in this order of priority:

1. answer the oldest approval: queue the head (``MergeQueued``) or refuse the claim with a
   finding (the author approving their own unit, a head that is not the unit's, a unit
   that is not ready);
2. promote open trunk-red findings of a unit whose builder gave up (``contract-wrong``);
3. know what judges trunk: with no adoption on the log, adopt trunk's file (a first
   start); answer the oldest ``config.adopt`` claim (an operator's is read by the shell,
   anyone else's refused);
4. keep trunk honest, always with the adopted configuration: a trunk the merger did not
   put there (first sight, an outside push) is gated, unless its trailers say the merger
   wrote it and did not record it yet; a trunk that moved, or was gated under another
   adoption, is gated again; green after a merge marks the unit DONE, red reverts the
   merge (or, for a push, restores the last green tree) with the finding;
5. move the queue: ask the shell to stack candidates, and when the head's result is in,
   record it; green moves trunk to exactly that commit, red returns the unit with a
   trunk-red (or contract-wrong) finding, a conflict returns it with the hunks. A queued
   unit with an auto-picked decision no second principal has seen yet
   (:func:`~projections.builds.unseen_picks`) is passed over until one has.

Steps 1 and 2 need the log alone (:mod:`.approvals`). Steps 3 to 5 wait while an effect
of the merger is under way (trunk has one writer, and it does one thing at a time).
Whatever needs the repository — running the gates, merging, moving the ref, reading the
sibling diff — is an effect (:mod:`.effects`) the shell carries out (``daemon.py``); unit
transitions are :func:`~projections.claims.merged` and
:func:`~projections.claims.returned` moves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from projections.builds import BuildsState, unseen_picks
from projections.claims import Refusal, Verdict, merged, returned
from projections.merge_trunk import Tested
from projections.merges import Adoption, MergesState, QueueEntry
from projections.units import UnitsState, UnitView
from schemas import Event
from schemas.ids import answer_id
from workers.kernel import World
from workers.merger import adoption, facts, landing
from workers.merger.approvals import answer, author, promote, publish
from workers.merger.effects import (
    Adopt,
    AdoptFirst,
    CheckTrunk,
    Land,
    MergerIntent,
    RecordRed,
    Restore,
    Revert,
    Stack,
)
from workers.merger.facts import Author, RedCase
from workers.merger.recovery import recover, revert_case, undone
from workers.merger.seen import (
    PIPELINE,
    TRUNK,
    CandidateView,
    PipelineView,
    TrunkSeen,
    request_of,
)

MERGED_SALT = "merged"
RETURNED_SALT = "returned"


@dataclass(frozen=True)
class Policy:
    """How the merger is set up: the trunk branch, and how many candidates test at once."""

    trunk: str = "main"
    window: int = 3


@dataclass(frozen=True)
class Step:
    """One decision's inputs, and how its intents are made."""

    world: World
    policy: Policy
    merges: MergesState
    units: UnitsState

    def author(self, unit: str) -> Author:
        return author(self.world, self.merges, self.units, unit)

    def publish(self, *events: Event) -> MergerIntent:
        return publish(self.world, *events)


def decide(world: World, policy: Policy) -> list[MergerIntent]:
    """The merger's next step for ``world.project`` (none: wait for something to change)."""
    merges: MergesState = world.state("merges")
    units: UnitsState = world.state("units")
    answered = (
        answer(world, merges, units)
        or promote(world, merges, units)
        or landing.claim_answer(world, landing.state_of(world))
    )
    if answered is not None:
        return [answered]
    if world.running:
        return []
    return trunk(Step(world, policy, merges, units))


# -- trunk ----------------------------------------------------------------------------------


def trunk(step: Step) -> list[MergerIntent]:
    """Keep trunk honest, then move the queue (only on a trunk gated green)."""
    seen: TrunkSeen | None = step.world.outside.get(TRUNK)
    if seen is None:
        return []  # the branch does not exist (yet): nothing to merge into
    adopted = step.merges.adopted
    if adopted is None:
        # Nothing judges trunk until a configuration is adopted: `loopbus up` adopts
        # trunk's before any daemon starts; a merger started on its own does it here.
        return [AdoptFirst(project=step.world.project, ref=seen.commit)]
    claimed = adoption_claim(step)
    if claimed is not None:
        return [claimed]
    ref, view = seen.commit, step.merges.trunk
    if landing.adoption_pending(landing.state_of(step.world), step.merges):
        return []  # the adoption landed with it comes next in the same batch
    if ref != view.commit:
        return recover(step, seen) or [check_trunk(step, ref)]
    checked = view.checked
    if checked is None or checked.candidate != ref or checked.config != adopted.digest:
        return [check_trunk(step, ref)]
    settled = settle(step, ref, checked)
    if settled is not None:
        return settled
    passing = facts.trunk_checks_passed(step.world, step.merges.gate_findings, checked)
    if passing:
        return [step.publish(*passing)]
    if view.recheck is not None and view.recheck != view.rechecked:
        return [recheck_trunk(step, ref, view.recheck)]
    if not checked.green:
        return red_trunk(step, ref, checked)
    if view.red_findings:
        return [step.publish(*facts.trunk_green_again(step.world, view.red_findings, checked))]
    # Trunk is green under the adopted configuration: a contract or an approved proposal
    # lands before the queue moves (a candidate stacked now would be judged by the old one).
    contract = landing.state_of(step.world)
    lands = landing.next_landing(step.world, contract, step.merges, ref)
    if lands is not None:
        return [lands]
    return move_queue(step, ref)


def check_trunk(step: Step, ref: str) -> CheckTrunk:
    """Run every check on trunk as it is now (the shell records the verdict), always with
    the adopted configuration, never with the ``loopbus.toml`` of the commit itself."""
    view, advance = step.merges.trunk, step.merges.last_advance
    ours = view.commit == ref and view.moved_by is not None
    unit = head = None
    if ours and advance is not None and view.moved_by == advance.id:
        unit, head = advance.unit, advance.commit
    cause = view.moved_by if ours else None
    judge, reference = judged_by(step, ours)
    return CheckTrunk(
        project=step.world.project,
        ref=ref,
        unit=unit,
        head=head,
        cause=cause,
        judge=judge,
        reference=reference,
    )


def recheck_trunk(step: Step, ref: str, request: str) -> CheckTrunk:
    """Run every check on trunk again, past the cache: an operator said its inputs may have
    changed outside the repository (``loopbus trunk recheck``)."""
    view = step.merges.trunk
    ours = view.commit == ref and view.moved_by is not None
    judge, reference = judged_by(step, ours)
    return CheckTrunk(
        project=step.world.project,
        ref=ref,
        unit=None,
        head=None,
        cause=request,
        judge=judge,
        reference=reference,
        force=True,
    )


def judged_by(step: Step, ours: bool) -> tuple[Adoption, str | None]:
    """How a trunk run is judged: with the adopted configuration; a trunk the merger did
    not move is also held to the tests of ``reference`` (the last green trunk, else the
    adopted commit) and is red when it changes the gate configuration since then."""
    adopted = step.merges.adopted
    assert adopted is not None
    reference = None if ours else (step.merges.trunk.green_commit or adopted.commit)
    return adopted, reference


def adoption_claim(step: Step) -> MergerIntent | None:
    """Answer the oldest ``config.adopt`` claim: an agent's (or one naming no full sha) is
    refused at once; an operator's is the shell's, which reads the commit's file."""
    for claim in step.merges.adopt_claims:
        refused = adoption.claim_refusal(claim)
        if refused is not None:
            world = step.world
            return step.publish(adoption.refusal(claim, world.project, world.actor, *refused))
        return Adopt(project=step.world.project, claim=claim)
    return None


def settle(step: Step, ref: str, checked: Tested) -> list[MergerIntent] | None:
    """After a merge reached trunk and trunk's gates ran: DONE when green, else revert.
    ``None``: nothing to settle (or the unit cannot move), go on."""
    advance = step.merges.last_advance
    if advance is None or advance.done:
        return None
    if advance.reverted is not None:
        if advance.returned:
            return None
        revert = advance.reverted
        return move(step, advance.unit, lambda v: returned_move(v, advance.commit, revert))
    if step.merges.trunk.moved_by != advance.id:
        return None
    if checked.green:
        summary = f"merged into {step.policy.trunk} as {advance.merge[:12]}; trunk gates green"
        return move(
            step, advance.unit, lambda v: merged_move(v, advance.commit, checked.id, summary)
        )
    case = revert_case(step, advance, checked)
    return [
        Revert(
            project=step.world.project,
            ref=ref,
            advance=advance,
            case=case,
            green_tree=step.merges.trunk.green_tree,
            restore=undone(step, advance),
        )
    ]


def red_trunk(step: Step, ref: str, checked: Tested) -> list[MergerIntent]:
    """Trunk is red and no merge of ours is to blame: go back to the last green trunk,
    or, with none known, tell the operator once and hold the queue."""
    view = step.merges.trunk
    if view.green_tree is not None and view.green_tree != checked.tree:
        return [
            Restore(
                project=step.world.project,
                ref=ref,
                checked=checked,
                green_tree=view.green_tree,
                green=view.green_commit,
            )
        ]
    if view.red_notice == ref:
        return []
    world = step.world
    return [
        step.publish(facts.red_notice(world.project, world.actor, step.policy.trunk, ref, checked))
    ]


# -- the queue ------------------------------------------------------------------------------


def move_queue(step: Step, trunk_commit: str) -> list[MergerIntent]:
    builds: BuildsState = step.world.state("builds")
    # A unit with an auto-picked decision no second principal has seen waits in the queue
    # (docs/decisions.md): the others go past it.
    entries = [
        e for e in step.merges.queue if stands(e, step.units) and not unseen_picks(builds, e.unit)
    ]
    pipeline: PipelineView = step.world.outside.get(PIPELINE, PipelineView())
    if not entries:
        return [stack(step, trunk_commit, [])] if pipeline.stacked else []
    head = entries[0]
    if head.conflicted is not None:
        conflicted = head.conflicted
        return move(step, head.unit, lambda v: returned_move(v, head.head, conflicted)) or []
    tested = head.tested
    adopted = step.merges.adopted
    assert adopted is not None
    # A result counts only when it sat directly on trunk and was judged with the
    # configuration adopted now (an adoption since then calls for a new test).
    if tested is not None and tested.base == trunk_commit and tested.config == adopted.digest:
        if tested.green:
            land = Land(
                project=step.world.project,
                entry=head,
                tested=tested,
                trunk=trunk_commit,
                adopted=adopted,
            )
            return [land]
        return move(step, head.unit, lambda v: returned_move(v, head.head, tested.id)) or []
    wanted = entries[: max(step.policy.window, 1)]
    if pipeline.request != request_of(trunk_commit, wanted, adopted.digest):
        return [stack(step, trunk_commit, wanted)]
    first = pipeline.stacked[0] if pipeline.stacked else None
    if first is None or first.key != (trunk_commit, head.unit, head.head):
        return []
    return head_result(step, head, first)


def stack(step: Step, trunk_commit: str, wanted: list[QueueEntry]) -> Stack:
    """Have the shell stack ``wanted`` on trunk (and drop every other candidate). Each
    unit's criteria (from the system's plan) go along: its candidate may clear them from
    ``pending`` and nothing else of trunk's gate configuration."""
    adopted = step.merges.adopted
    assert adopted is not None
    criteria = {e.unit: tuple(criteria_of(step.units, e.unit)) for e in wanted}
    return Stack(
        project=step.world.project,
        entries=tuple(wanted),
        trunk=trunk_commit,
        criteria=criteria,
        judge=adopted.text,
        config=adopted.digest,
    )


def criteria_of(units: UnitsState, unit: str) -> list[str]:
    view = units.units.get(unit)
    return list(view.criteria) if view is not None else []


def head_result(step: Step, head: QueueEntry, first: CandidateView) -> list[MergerIntent]:
    """Record the result of the queue's head, tested directly on trunk (or its conflict)."""
    base = first.key[0]
    if not first.attempt.clean:
        return [step.publish(*facts.conflict(step.author(head.unit), head, base, first.attempt))]
    if first.verdict is None:
        return []  # its test is running
    world, verdict = step.world, first.verdict
    tested = facts.candidate_tested(
        world.project, world.actor, head, first.attempt, verdict, base=base, ahead=first.ahead
    )
    # The gate results the verdict names go first: the kernel publishes in order and stops
    # at the first failure, so the verdict never reaches the log ahead of them.
    if verdict.green:
        return [*verdict.records, step.publish(tested)]
    case = RedCase(
        who=step.author(head.unit),
        stage="candidate",
        head=head.head,
        commit=tested.candidate,
        tree=tested.tree,
        onto=base,
        failing=tuple(verdict.failing),
        checks=tuple(verdict.checks),
        cause=tested.id,
    )
    tested = msgspec.structs.replace(tested, at=world.now)
    return [*verdict.records, RecordRed(project=world.project, tested=tested, case=case)]


# -- unit moves -----------------------------------------------------------------------------


def move(step: Step, unit: str, make: Callable[[UnitView], Verdict]) -> list[MergerIntent] | None:
    """The unit transition ``make`` warrants; ``None`` when the unit cannot move."""
    view = step.units.units.get(unit)
    if view is None:
        return None
    verdict = make(view)
    if isinstance(verdict, Refusal):
        return None
    seed = verdict.cause or view.last_event
    if seed is None:
        return None
    salt = MERGED_SALT if verdict.by == "merged" else RETURNED_SALT
    return [step.world.move(verdict, answer_id(seed, salt))]


def stands(entry: QueueEntry, units: UnitsState) -> bool:
    view = units.units.get(entry.unit)
    return view is not None and view.state == "working" and view.ready and view.head == entry.head


def merged_move(view: UnitView, head: str, cause: str, summary: str) -> Verdict:
    if view.head != head:
        return Refusal(view.unit, "head-moved", f"unit {view.unit} moved on from {head[:12]}")
    return merged(view, cause, summary)


def returned_move(view: UnitView, head: str, cause: str | None) -> Verdict:
    if view.head != head or not view.ready:
        return Refusal(view.unit, "head-moved", f"unit {view.unit} already moved on")
    return returned(view, cause)
