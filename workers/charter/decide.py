"""The charter daemon's decision: pure, over the ``charter``, ``merges`` and ``gates`` folds
and the time (no I/O, no clock of its own, no memory).

One step per decision, first first:

1. answer the oldest operator's approval: ``charter.approved`` for the charter awaiting
   (the one it names, as submitted in the submission it names), or a refusal finding;
   the approval pins what it can without git (tests given with their ``source``, checks
   of the adopted configuration) and names trunk's commit as the merger last saw it;
2. while a run is in force and has not ended:

   * answer an operator's stop: ``run.ended`` (stopped);
   * pin the other criteria from git at that commit (an effect reads it):
     ``run.criteria_pinned``;
   * judge the criteria on the latest trunk gate run that is green under the adopted
     configuration and not judged yet for this run: ``run.criteria_checked``;
   * every criterion holds: ``run.ended`` (met);
   * the wall clock is spent, or the run is finalizing and none of its slices is open:
     ``run.ended`` (budget);
   * ≈90% of the wall clock spent, or the tokens or slices budget reached:
     ``run.finalizing``;
   * half the wall clock spent: ``run.checked_in``.

Every fact's id derives from what it answers (the claim, the run, the trunk run judged),
and each is published conditionally on its subject as this decision saw it, so a restart
or a second daemon stores it once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from projections import charter as charter_fold
from projections import gates as gates_fold
from projections import merges as merges_fold
from projections.charter import RunView, open_slices
from projections.gates import GatesState
from projections.merges import MergesState
from schemas import FindingRaised
from schemas.authority import ANSWERS_CLAIM, REFUSAL_CLASS
from schemas.charter import (
    CharterApprove,
    CharterApproved,
    EndReason,
    RunCheckedIn,
    RunCriteriaChecked,
    RunCriteriaPinned,
    RunEnded,
    RunFinalizing,
)
from schemas.ids import answer_id
from schemas.targets import RecordTarget
from workers.charter.criteria import approval_pins, check_digest, check_pins, judge
from workers.charter.effects import CharterIntent, ReadCriteria
from workers.charter.reading import Reading, reading_key
from workers.kernel import World

F = TypeVar("F", RunCheckedIn, RunCriteriaPinned, RunCriteriaChecked, RunFinalizing, RunEnded)

CHECK_IN = 0.5
FINALIZE = 0.9
"""Shares of the wall clock at which the run checks in, and finalizes."""


@dataclass(frozen=True)
class Options:
    check_in: float = CHECK_IN
    finalize: float = FINALIZE
    reads_repo: bool = False
    """The daemon reads this project's repository (``--repo``): test criteria can be
    pinned and confirmed. Without it, only check criteria can hold."""


DEFAULTS = Options()


def decide(world: World, options: Options = DEFAULTS) -> Sequence[CharterIntent]:
    view: RunView = world.state(charter_fold.FOLD.name)
    for claim in view.approvals.values():
        return [world.publish_if(answer_approval(world, view, claim))]
    if view.charter is None or view.ended is not None or not view.run:
        return ()
    step = run_step(world, view, options)
    if step is None:
        return ()
    return [step] if isinstance(step, ReadCriteria) else [world.publish_if(step)]


def answer_approval(
    world: World, view: RunView, claim: CharterApprove
) -> CharterApproved | FindingRaised:
    awaiting = view.awaiting
    if awaiting is None:
        return refusal(world, claim, "no-charter-awaiting", "no charter awaits approval")
    if claim.charter and claim.charter != awaiting.id:
        return refusal(
            world,
            claim,
            "not-the-charter-awaiting",
            f"it names charter {claim.charter!r}, but the one awaiting is {awaiting.id!r}",
        )
    if claim.submission and claim.submission != view.awaiting_submission:
        return refusal(
            world,
            claim,
            "submission-replaced",
            f"it approves submission {claim.submission}, replaced since by "
            f"{view.awaiting_submission}; read it (loopbus charter show) and approve again",
        )
    merges: MergesState = world.state(merges_fold.FOLD.name)
    adopted = merges.adopted.text if merges.adopted is not None else None
    return CharterApproved(
        id=answer_id(claim.id, "charter-approved"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        charter=awaiting,
        supersedes=view.charter.id if view.charter is not None else None,
        claim=claim.id,
        submission=view.awaiting_submission or None,
        by=claim.actor.principal,
        why=claim.why,
        trunk=merges.trunk.commit or "",
        pins=approval_pins(awaiting, adopted),
    )


def refusal(world: World, claim: CharterApprove, code: str, message: str) -> FindingRaised:
    return FindingRaised(
        id=answer_id(claim.id, "refused"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        producer="meta_rule",
        target=RecordTarget(id=claim.id),
        severity="medium",
        criterion=code,
        cls=REFUSAL_CLASS,
        message=f"charter approval refused: {message}",
        evidence={ANSWERS_CLAIM: claim.id, "claimant": claim.actor.principal, "code": code},
        owner="operator",
    )


Step = (
    RunEnded | RunCriteriaPinned | RunCriteriaChecked | RunFinalizing | RunCheckedIn | ReadCriteria
)


def run_step(world: World, view: RunView, options: Options) -> Step | None:
    assert view.charter is not None and view.approved_at is not None
    for stop in view.stops.values():
        return ended(world, view, "stopped", stop.why or "an operator stopped it", stop.id)
    budgets = view.charter.budgets
    wall = budgets.wall_clock_s
    elapsed = (world.now - view.approved_at).total_seconds()
    if elapsed >= wall:  # first: no reading of git may hold the run past its wall clock
        return ended(world, view, "budget", f"the wall clock of {budgets.wall_clock} is spent")
    if view.pinning:
        pinned = pin(world, view, options)
        if pinned is not None:
            return pinned
    else:
        judged = criteria(world, view, options)
        if judged is not None:
            return judged
    # Met ends the run once the slice in flight has closed too (its boot check and record
    # belong to the run); the planner plans nothing more meanwhile.
    if view.met and not open_slices(view):
        return ended(world, view, "met", f"every criterion holds on trunk {view.criteria_trunk}")
    spent = spent_budget(view)
    if view.finalizing and not open_slices(view) and spent:
        return ended(world, view, "budget", f"{spent}, and no slice is open")
    if not view.finalizing:
        if spent:
            return finalizing(world, view, spent)
        if elapsed >= options.finalize * wall:
            share = f"{options.finalize:.0%}"
            return finalizing(world, view, f"{share} of the wall clock {budgets.wall_clock}")
        if not view.checked_in and elapsed >= options.check_in * wall:
            return run_fact(
                RunCheckedIn,
                world,
                view,
                "checked-in",
                elapsed_s=elapsed,
                wall_clock_s=wall,
                detail=f"{len(view.slices)} slices, {len(view.held)} criteria held",
            )
    return None


def spent_budget(view: RunView) -> str:
    """Which count budget is reached (``""``: none)."""
    assert view.charter is not None
    budgets = view.charter.budgets
    if budgets.slices and len(view.slices) >= budgets.slices:
        return f"the slices budget ({budgets.slices}) is reached"
    if budgets.tokens and view.tokens >= budgets.tokens:
        return f"the tokens budget ({budgets.tokens}) is reached ({view.tokens} spent)"
    return ""


def test_ids(view: RunView) -> list[str]:
    """Every test criterion's node id: a reading is kept by commit, so it reads them all."""
    assert view.charter is not None
    return sorted({c.test for c in view.charter.criteria if c.test})


def read_effect(world: World, commit: str, tests: list[str]) -> ReadCriteria:
    """Ask the shell to read ``tests`` and ``loopbus.toml`` at ``commit`` from git."""
    return ReadCriteria(project=world.project, commit=commit, tests=tuple(tests))


def pin(world: World, view: RunView, options: Options) -> RunCriteriaPinned | ReadCriteria | None:
    """Pin the criteria the approval could not: tests to their function at the approval's
    trunk, checks to their definition in its ``loopbus.toml``. What is not there has no
    pin, and its criterion never holds (the operator is told why)."""
    assert view.charter is not None
    waiting = [c for c in view.charter.criteria if c.id not in view.pins]
    if view.pin_cause:
        # A reviewed skeleton pins the tests it wrote, never a check (a contract could
        # have added one under a criterion's id since the approval).
        waiting = [c for c in waiting if c.test]
    pins: dict[str, str] = {}
    unpinned: dict[str, str] = {}
    reading: Reading | None = None
    merges: MergesState = world.state(merges_fold.FOLD.name)
    adopted = merges.adopted.text if merges.adopted is not None else None
    # The approval's trunk; for a reviewed skeleton, the trunk its boot check ran on.
    at_approval = view.skeleton_commit if view.pin_cause else view.pinned_trunk
    if options.reads_repo:
        key = reading_key(world.project, at_approval)
        reading = world.outside.get(key)
        if reading is None:
            if key in world.failed:
                return None  # the shell logged it; asked again after the next tick
            return read_effect(world, at_approval, test_ids(view))
    commit = reading.commit if reading is not None else at_approval
    if not view.pin_cause:
        # The checks that may speak for a test criterion, as configured at approval
        # (those the approval could not see: no configuration adopted yet).
        config = reading.config if reading is not None and reading.config else adopted
        pins.update({k: v for k, v in check_pins(config).items() if k not in view.pins})
    at = f"trunk {commit[:12]}" if commit else "trunk"
    when = "its skeleton" if view.pin_cause else "the charter"
    for criterion in waiting:
        found: str | None = None
        if reading is None and criterion.check and not view.pin_cause:
            found = check_digest(adopted, criterion.check)
            why = f"check {criterion.check} is not in the adopted loopbus.toml"
        elif reading is None:
            why = "the charter daemon reads no repository for this project (--repo)"
        elif criterion.test:
            found = reading.bodies.get(criterion.test)
            why = (
                f"test {criterion.test} was not on {at} when {when} was approved and the "
                "charter gives no source for its file; submit the charter again with it (or "
                "with a first slice that is a skeleton writing it, for review)"
            )
        else:
            found = check_digest(reading.config, criterion.check)
            why = (
                f"check {criterion.check} was not in loopbus.toml on {at} when {when} was "
                "approved; add it (loopbus config propose), then submit the charter again"
            )
        if found is not None:
            pins[criterion.id] = found
        else:
            unpinned[criterion.id] = why
    return run_fact(
        RunCriteriaPinned,
        world,
        view,
        f"pinned:{view.pin_cause}" if view.pin_cause else "pinned",
        trunk=commit,
        pins=pins,
        unpinned=unpinned,
        cause=view.pin_cause,
    )


def criteria(
    world: World, view: RunView, options: Options
) -> RunCriteriaChecked | ReadCriteria | None:
    """Judge the latest trunk run when it is green under the adopted configuration and
    this run has not judged it yet; a test criterion's function is read from git at that
    commit first (an effect), to be compared with its pin."""
    assert view.charter is not None
    merges: MergesState = world.state(merges_fold.FOLD.name)
    run = merges.trunk.checked
    if run is None or not run.green or run.id == view.criteria_cause:
        return None
    if merges.adopted is not None and run.config != merges.adopted.digest:
        return None  # judged with another configuration than the one adopted: not trunk's
    tests = [c for c in view.charter.criteria if c.test and c.id in view.pins]
    bodies: dict[str, str] | None = None
    config_text = merges.adopted.text if merges.adopted is not None else None
    if options.reads_repo:
        key = reading_key(world.project, run.candidate)
        reading: Reading | None = world.outside.get(key)
        if reading is None and (tests or config_text is None):
            if key in world.failed:
                return None
            return read_effect(world, run.candidate, test_ids(view))
        if reading is not None:
            bodies = {c.id: reading.bodies[c.test] for c in tests if c.test in reading.bodies}
            if config_text is None:
                config_text = reading.config
        else:
            bodies = {}
    gates: GatesState = world.state(gates_fold.FOLD.name)
    verdict = judge(
        view.charter,
        run,
        gates,
        pins=view.pins,
        unpinned=view.unpinned,
        bodies=bodies,
        config_text=config_text,
    )
    return run_fact(
        RunCriteriaChecked,
        world,
        view,
        f"criteria:{run.id}",
        trunk=run.candidate,
        held=verdict.held,
        failing=verdict.failing,
        cause=run.id,
        detail=verdict.detail,
        bodies=bodies or {},
    )


def finalizing(world: World, view: RunView, why: str) -> RunFinalizing:
    return run_fact(
        RunFinalizing,
        world,
        view,
        "finalizing",
        detail=f"{why}: no new slice is planned; the open slice may finish",
    )


def ended(
    world: World, view: RunView, reason: EndReason, detail: str, claim: str | None = None
) -> RunEnded:
    return run_fact(
        RunEnded,
        world,
        view,
        "ended",
        reason=reason,
        detail=detail,
        claim=claim,
    )


def run_fact(kind: type[F], world: World, view: RunView, salt: str, **fields: Any) -> F:
    """A fact about the run in force, its id derived from the run and ``salt`` (what it
    answers), so a restart or a second daemon stores it once."""
    assert view.charter is not None
    return kind(
        id=answer_id(view.run, salt),
        project=world.project,
        actor=world.actor,
        at=world.now,
        run=view.run,
        charter=view.charter.id,
        **fields,
    )
