"""The builder's policy: pure, over one project's folded world and its ``[build]`` table.

For every unit the builds projection knows, in order:

* a novel decision returned three times halts the unit (the builder keeps asking what it
  was already told), and so does a round that changed nothing on the last rung (the
  ladder is spent);
* an operator's choice for a decision that waits on the operator becomes the recorded
  decision (a fact; the operator's claim alone changes nothing; a choice from any other
  role is never one, see :data:`projections.builds.CHOOSERS`). An answer to a
  decision a reviewer escalated supersedes the auto pick it re-opened;
* a unit blocked on a decision that is now recorded is unblocked, and the decision's
  finding resolved; one the builder blocked on a sibling unit is unblocked once the
  sibling is done;
* a dispatched unit nobody started is started (the builder principal's claim); a unit
  started, its claims are its holder's (:func:`claimant`), and a unit an operator started
  by hand gets no round (the units daemon would refuse a builder's claims for it);
* a working unit that owes a round (see :mod:`projections.builds`) gets one: the
  ``build`` effect, keyed by the unit and its trigger, so a round runs once per trigger;
  when its head collided with trunk, the effect names the conflict (the shell merges
  trunk into the head for the round: :mod:`.conflict`). Its brief carries the decisions
  in force that bear on the unit (its own, and the project's whose files or criteria it
  shares, by :func:`projections.decisions.bearing_on`), and those superseded
  since its last round.
"""

from __future__ import annotations

import msgspec

from projections import convergence as conv
from projections import decisions as decisions_fold
from projections import lessons as lessons_fold
from projections import round_rules
from projections.builds import CHOOSERS, BuildsState, Collision, UnitBuild
from projections.claims import Move
from projections.findings import FindingsState, open_findings
from projections.intents import Publish, PublishBatch
from projections.units import UnitsState, UnitView
from schemas import Actor, FindingResolved, Outcome
from schemas.builds import BriefDecision, BriefFinding, BriefSuperseded
from schemas.decisions import STATED_WEIGHT, DecisionRecorded, option_ids
from schemas.ids import answer_id
from schemas.reports import StartedReport, UnblockedReport
from workers.agents.config import BuildConfig
from workers.builder.effects import BuilderIntent, BuildRound, RoundBrief
from workers.kernel import World

REPEATS_TO_HALT = 3


def decide(world: World, config: BuildConfig) -> list[BuilderIntent]:
    """Everything the world warrants for the project's units (see the module docstring)."""
    builds: BuildsState = world.state("builds")
    units: UnitsState = world.state("units")
    intents: list[BuilderIntent] = []
    for unit, build in builds.units.items():
        view = units.units.get(unit)
        if view is None or view.state in ("done", "failed", "lost"):
            continue
        intents.extend(_for_unit(world, config, build, view))
    return intents


def _for_unit(
    world: World, config: BuildConfig, build: UnitBuild, view: UnitView
) -> list[BuilderIntent]:
    builder = claimant(config, build.unit, view)
    repeated = sorted(d for d, times in build.asked.items() if times >= REPEATS_TO_HALT)
    if repeated and view.state in ("working", "blocked"):
        why = (
            f"the builder returned novel decision {repeated[0]!r} "
            f"{build.asked[repeated[0]]} times; it keeps asking what its brief already settles"
        )
        seed = build.trigger or view.last_event or ""
        return [_halt(world, view, why, "decision-repeated", answer_id(seed, "halt"))]
    if build.spent is not None and view.state in ("working", "blocked"):
        why = (
            f"the builder changed nothing on rung {round_rules.LAST_RUNG} "
            f"({round_rules.tactic(round_rules.LAST_RUNG)}), the last: the ladder is spent"
        )
        return [_halt(world, view, why, "halted", answer_id(build.spent, "halt"))]
    intents = _recorded_choices(world, build)
    if intents:
        return intents
    if builder is None:
        return []  # an operator or a builder not on our roster holds it: not our round
    block = view.block
    if view.state == "blocked" and block is not None and block.reason == "awaiting-operator":
        waiting = {a.finding for a in build.awaiting.values()}
        if block.subject in build.decided_findings and block.subject not in waiting:
            return [_unblock(world, builder, build, view, block.subject)]
        return []
    if view.state == "blocked" and block is not None and block.reason == "awaiting-dependency":
        units: UnitsState = world.state("units")
        sibling = units.units.get(block.subject)
        if not view.held and sibling is not None and sibling.state == "done":
            seed = view.block_id or block.subject
            claim_id = answer_id(seed, "unblocked")
            if any(c.id == claim_id for c in units.claims.get(build.unit, [])):
                return []  # claimed already: the units daemon answers it
            unblocked = UnblockedReport(
                id=claim_id,
                project=world.project,
                actor=builder,
                unit=build.unit,
            )
            return [Publish(unblocked)]
        return []
    if build.owes_round() and build.trigger_kind == "dispatched" and not view.started:
        if build.started_for != build.trigger:
            started = StartedReport(
                id=answer_id(build.trigger or "", "started"),
                project=world.project,
                actor=builder,
                unit=build.unit,
            )
            return [Publish(started)]
        return []
    if view.state == "working" and not view.ready and build.owes_round() and not build.awaiting:
        return [_round(world, config, build, view, builder)]
    return []


def _recorded_choices(world: World, build: UnitBuild) -> list[BuilderIntent]:
    """The operator's choices on the unit's open decisions, recorded as decisions."""
    intents: list[BuilderIntent] = []
    for choice in build.choices:
        asked = build.awaiting.get(choice.decision_id)
        if asked is None or choice.choose not in option_ids(asked.options):
            continue  # nothing waits on it, or no such option: `loopbus decide` says so
        if choice.actor.role not in CHOOSERS:
            continue  # the fold keeps none; said again where the owner is written
        recorded = DecisionRecorded(
            id=answer_id(choice.id, "recorded"),
            project=world.project,
            actor=world.actor,
            unit=build.unit,
            decision_id=choice.decision_id,
            question=asked.question,
            options=option_ids(asked.options),
            trade_offs=asked.options,
            chosen=choice.choose,
            owner=f"operator:{choice.actor.principal}",
            confidence=STATED_WEIGHT[asked.confidence],
            stated_confidence=asked.confidence,
            rationale=choice.why or asked.reasoning,
            cause=choice.id,
            supersedes=asked.reopens,
        )
        intents.append(Publish(recorded))
    return intents


def claimant(config: BuildConfig, unit: str, view: UnitView) -> Actor | None:
    """Whom the unit's claims are published as: the roster principal for the unit while
    nobody holds it; once it is held, its holder if that is a builder on the roster (the
    units daemon refuses another builder's claims for a held unit, and the watchdog counts
    only the holder's beats, so a roster reshuffled mid-unit keeps its units); ``None``
    when an operator or a builder not on the roster holds it. An agent credential may
    claim as a builder of its own name and start a dispatched unit before this daemon
    does: its round is not ours to run, nor ours to run under its name."""
    holder = view.holder
    if holder is None:
        return Actor(role="builder", principal=config.principal(unit))
    if holder.role == "builder" and holder.principal in config.roster:
        return holder
    return None


def _halt(world: World, view: UnitView, why: str, ended_by: str, event_id: str) -> BuilderIntent:
    outcome = Outcome(summary=why, ended_by=ended_by)
    assert view.state is not None
    move = Move(view.unit, view.state, "failed", "halted", outcome=outcome, commit=view.head)
    return world.move(move, event_id)


def _unblock(
    world: World, builder: Actor, build: UnitBuild, view: UnitView, finding: str
) -> BuilderIntent:
    seed = view.block_id or finding
    resolved = FindingResolved(
        id=answer_id(seed, "decided"),
        project=world.project,
        actor=world.actor,
        finding=finding,
        why="the operator's decision is recorded",
    )
    unblocked = UnblockedReport(
        id=answer_id(seed, "unblocked"), project=world.project, actor=builder, unit=build.unit
    )
    return PublishBatch((resolved, unblocked))


def _round(
    world: World, config: BuildConfig, build: UnitBuild, view: UnitView, builder: Actor
) -> BuildRound:
    findings: FindingsState = world.state("findings")
    convergence: conv.ConvergenceState = world.state("convergence")
    unit_conv = convergence.units.get(build.unit)
    rung = unit_conv.rung if unit_conv is not None else 1
    brief = RoundBrief(
        project=world.project,
        slice=build.slice or view.slice,
        unit=build.unit,
        title=view.title,
        files=list(view.files),
        criteria=list(view.criteria),
        design_ref=build.design_ref,
        start=view.head or build.base,
        round=build.rounds + 1,
        findings=[
            BriefFinding(
                id=f.id,
                target=f.target,
                severity=f.severity,
                criterion=f.criterion,
                message=f.message,
            )
            for f in open_findings(findings, build.unit)
        ],
        rung=rung,
        tactic=f"{round_rules.tactic(rung)}: {round_rules.ask(rung)}",
        decisions=in_force(world, build, view),
        superseded=superseded(world, build, view),
        lessons=lessons_fold.in_force(world.state(lessons_fold.FOLD.name)),
        problem=build.note,
    )
    assert build.trigger is not None  # a round is owed only to a trigger (owes_round)
    return BuildRound(
        project=world.project,
        unit=build.unit,
        brief=brief,
        principal=builder.principal,
        trigger=build.trigger,
        asked=dict(build.asked),
        conflict=_collision(build, view),
    )


def _collision(build: UnitBuild, view: UnitView) -> Collision | None:
    """The merge conflict this round resolves: the one of the head it starts from."""
    collision = build.collision
    if collision is None or collision.head != (view.head or build.base):
        return None
    return msgspec.structs.replace(collision)  # a copy: the fold keeps its own


def in_force(world: World, build: UnitBuild, view: UnitView) -> list[BriefDecision]:
    """The decisions in force for the unit: its own novel decisions, then the project's
    decisions bearing on its files or criteria; none that a later record superseded."""
    state: decisions_fold.DecisionsState = world.state(decisions_fold.FOLD.name)
    out: list[BriefDecision] = []
    seen: set[str] = set()
    for key, own in build.decisions.items():
        kept = state.decisions.get(own.id)
        if kept is not None and kept.superseded_by is not None:
            continue
        seen.add(own.id)
        out.append(
            BriefDecision(
                decision_id=key,
                question=own.question,
                chosen=own.chosen,
                by=own.by,
                rationale=own.rationale,
            )
        )
    for found in decisions_fold.bearing_on(state, list(view.files), list(view.criteria)):
        bearing = found.record
        if bearing.id in seen:
            continue
        seen.add(bearing.id)
        out.append(
            BriefDecision(
                decision_id=bearing.decision_id or bearing.id,
                question=bearing.question,
                chosen=bearing.chosen,
                by=bearing.owner,
                rationale=bearing.rationale,
            )
        )
    return out


def superseded(world: World, build: UnitBuild, view: UnitView) -> list[BriefSuperseded]:
    """The decisions that bore on the unit (its own, or by file or criterion) and were
    superseded since its last round: they left ``decisions``, and the builder is told."""
    builds: BuildsState = world.state("builds")
    state: decisions_fold.DecisionsState = world.state(decisions_fold.FOLD.name)
    out: list[BriefSuperseded] = []
    for old_id in builds.superseded[build.told_from :]:
        old = state.decisions.get(old_id)
        if old is None or old.superseded_by is None:
            continue
        record = old.record
        mine = record.unit == build.unit or decisions_fold.bears_on(
            record, list(view.files), list(view.criteria)
        )
        if mine:
            out.append(
                BriefSuperseded(
                    decision_id=record.decision_id or record.id,
                    question=record.question,
                    chosen=record.chosen,
                    superseded_by=old.superseded_by,
                )
            )
    return out
