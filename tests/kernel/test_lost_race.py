"""A conditional publish that loses a race whose winner the kernel has already folded is
decided again at once, instead of waiting for a record that may never come."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import msgspec
from kernelkit import running

from bus import Bus, Record, read
from projections.base import Fold, FoldFailure
from projections.intents import Intent, PublishIf
from schemas import Actor, Event, FindingRaised, project_subjects, subject_of
from schemas.ids import answer_id
from schemas.targets import RecordTarget
from workers.kernel import Daemon, World

NOTE, SUMMARY = "note", "summary"


class Notes(msgspec.Struct):
    notes: list[str] = []
    summarised: bool = False


def apply(state: Notes, event: Event) -> Notes:
    match event:
        case FindingRaised(criterion=criterion, id=finding) if criterion == NOTE:
            state.notes.append(finding)
        case FindingRaised(criterion=criterion) if criterion == SUMMARY:
            state.summarised = True
    return state


NOTES = Fold(name="notes", state_type=Notes, initial=Notes, apply=apply)


class Summariser(Daemon):
    """Publishes one summary on the notes' subject, conditionally on that subject.

    Its first decision stands in for a decision taken just before another writer's note
    was folded: it expects the subject at the first note's sequence, which the server has
    moved past, and the kernel has already folded the note that moved it."""

    name = "summariser"
    folds = (NOTES,)

    def __init__(self, project: str) -> None:
        super().__init__(projects=[project])
        self.first_seq = 0
        self.stale_once = True

    def fold(self, states: dict[str, object], record: Record) -> Sequence[FoldFailure]:
        failures = super().fold(states, record)
        self.first_seq = self.first_seq or record.seq
        return failures

    def decide(self, world: World) -> Sequence[Intent]:
        notes: Notes = world.state("notes")
        if notes.summarised or not notes.notes:
            return []
        summary = FindingRaised(
            id=answer_id(notes.notes[0], SUMMARY),
            project=world.project,
            actor=world.actor,
            at=world.now,
            producer="standards",
            target=RecordTarget(id=notes.notes[0]),
            severity="low",
            criterion=SUMMARY,
            message=f"{len(notes.notes)} notes",
        )
        if self.stale_once:
            self.stale_once = False
            return [PublishIf(summary, self.first_seq)]
        return [world.publish_if(summary)]


def note(project: str, actor: Actor, text: str) -> FindingRaised:
    return FindingRaised(
        project=project,
        actor=actor,
        producer="standards",
        target=RecordTarget(id="01JAAAAAAAAAAAAAAAAAAAAAAA"),
        severity="low",
        criterion=NOTE,
        message=text,
    )


async def test_a_race_lost_to_a_folded_winner_is_decided_again_at_once(
    bus: Bus, project: str, system: Actor
) -> None:
    """The first summary loses (the second note moved the subject); with nothing more on
    the log, the kernel decides again on its own and the summary is published once."""
    first, second = note(project, system, "one"), note(project, system, "two")
    assert subject_of(first) == subject_of(second)
    await bus.publish(first)
    last = (await bus.publish(second)).seq
    async with running(bus, Summariser(project)) as kernel:
        await asyncio.wait_for(kernel.wait_acted(last + 1), 20)  # its own summary, folded
    summaries = [
        r.event.message
        async for r in read(bus, subjects=[project_subjects(project)])
        if isinstance(r.event, FindingRaised) and r.event.criterion == SUMMARY
    ]
    assert summaries == ["2 notes"]
