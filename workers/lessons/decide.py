"""The lessons daemon's decision (pure): record each closed slice's lessons, draft a gate
for each lesson that recurs, and ask for each closed slice's closeout.

On the aggregate project (the catalogue, where every project's lesson records are folded
too), a lesson class recorded in several projects drafts its gate in each of them.
Every answer carries an id derived from what it answers, so a restart or a second daemon
stores it once.
"""

from __future__ import annotations

from projections import lessons, lessons_across, ratchet
from projections.intents import Publish
from projections.lessons import LessonsState, Recurrence
from projections.lessons_across import AcrossState
from schemas.ids import answer_id
from schemas.lessons import LessonsRecorded, SliceClosedOut
from schemas.ratchet import CATALOGUE, GateProposed
from workers.kernel import World
from workers.lessons.effects import CLOSEOUT, CloseOut, LessonsIntent


def decide(world: World, *, has_repo: bool, aggregate: str = CATALOGUE) -> list[LessonsIntent]:
    if world.project == aggregate:
        return across(world)
    state: LessonsState = world.state(lessons.FOLD.name)
    gates: ratchet.RatchetState = world.state(ratchet.FOLD.name)
    intents: list[LessonsIntent] = []
    for slice_id, due in lessons.due(state):
        intents.append(
            Publish(
                LessonsRecorded(
                    id=answer_id(due.closed, "lessons"),
                    project=world.project,
                    actor=world.actor,
                    at=world.now,
                    slice=slice_id,
                    closed=due.closed,
                    lessons=due.lessons,
                )
            )
        )
    for cls, found in lessons.recurring(state):
        gate = lessons.gate_id(cls)
        if ratchet.current(gates, "local", gate) is not None:
            continue  # drafted, approved or declined already: the ratchet's to settle
        intents.append(Publish(proposal(world, cls, gate, found)))
    for closing in lessons.to_close_out(state):
        if not has_repo:
            intents.append(Publish(no_repository(world, closing.slice, closing.closed)))
            continue
        intents.append(
            CloseOut(
                project=world.project,
                slice=closing.slice,
                closed=closing.closed,
                units=list(closing.units),
            )
        )
    return intents


def proposal(world: World, cls: str, gate: str, found: Recurrence) -> GateProposed:
    """The system's draft of the gate a recurring lesson asks for: it enters the ratchet
    as Drafted, owned by the project operator, who alone approves it."""
    latest = found.latest
    assert latest is not None and latest.check
    record = found.records[-1]
    return GateProposed(
        id=answer_id(record, f"lesson-gate:{cls}"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        gate=gate,
        check=latest.check,
        defect=f"{latest.kind}: {cls}",
        investigation=record,
        finding=latest.evidence[-1] if latest.evidence else record,
        why=f"lesson {cls} recurred in slices {', '.join(found.slices)}: {latest.sooner}",
    )


def across(world: World) -> list[LessonsIntent]:
    """On the aggregate: a class recorded in several projects drafts its gate in each one
    where it does not recur on its own."""
    state: AcrossState = world.state(lessons_across.FOLD.name)
    intents: list[LessonsIntent] = []
    for cls, project, seen in lessons_across.to_draft(state):
        latest = seen.latest
        assert latest is not None
        projects = ", ".join(sorted(state.classes[cls].projects))
        proposed = GateProposed(
            id=answer_id(seen.record, f"lesson-gate-across:{cls}"),
            project=project,
            actor=world.actor,
            at=world.now,
            gate=lessons.gate_id(cls),
            check=latest.check,
            defect=f"{latest.kind}: {cls}",
            investigation=seen.record,
            finding=latest.evidence[-1] if latest.evidence else seen.record,
            why=f"lesson {cls} recurred across projects {projects}: {latest.sooner}",
        )
        intents.append(Publish(proposed))
    return intents


def no_repository(world: World, slice_id: str, closed: str) -> SliceClosedOut:
    return SliceClosedOut(
        id=answer_id(closed, CLOSEOUT),
        project=world.project,
        actor=world.actor,
        at=world.now,
        slice=slice_id,
        closed=closed,
        trunk="",
        problem="no repository configured (--repo): no unit branch was collapsed",
    )
