"""``Kernel.wait_settled``: past ``wait_acted``, it also waits for the effects the decisions
started and for the events those effects asked for."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import msgspec
from kernelkit import running

from bus import Bus, read
from projections.base import Fold
from projections.intents import Effect, Intent, Publish
from schemas import Actor, Event, FindingRaised, project_subjects
from schemas.ids import answer_id
from schemas.targets import RecordTarget
from workers.kernel import Daemon, World

ASK, ANSWER = "ask", "answer"


class Asks(msgspec.Struct):
    open: list[str] = []


def apply(state: Asks, event: Event) -> Asks:
    match event:
        case FindingRaised(criterion=criterion, id=finding) if criterion == ASK:
            state.open.append(finding)
        case FindingRaised(criterion=criterion, evidence=evidence) if criterion == ANSWER:
            if evidence.get("ask") in state.open:
                state.open.remove(evidence["ask"])
    return state


ASKS = Fold(name="asks", state_type=Asks, initial=Asks, apply=apply)


class Answer(Effect, frozen=True, tag="test.answer.v1"):
    """Answer one ask (keyed by it)."""

    ask: str

    @property
    def key(self) -> str:
        return f"answer:{self.ask}"


class SlowAnswers(Daemon):
    """Answers every ask through an effect that waits until the test lets it go."""

    name = "slow-answers"
    folds = (ASKS,)

    def __init__(self, project: str) -> None:
        super().__init__(projects=[project])
        self.release = asyncio.Event()
        self.started = asyncio.Event()

    def decide(self, world: World) -> Sequence[Intent]:
        asks: Asks = world.state("asks")
        return [Answer(project=world.project, ask=ask) for ask in asks.open]

    async def perform(self, effect: Answer) -> Sequence[Intent]:
        self.started.set()
        await self.release.wait()
        ask = effect.ask
        answer = FindingRaised(
            id=answer_id(ask, ANSWER),
            project=effect.project,
            actor=self.actor,
            producer="standards",
            target=RecordTarget(id=ask),
            severity="low",
            criterion=ANSWER,
            message="answered",
            evidence={"ask": ask},
        )
        return [Publish(answer)]


async def answers(bus: Bus, project: str) -> list[str]:
    return [
        str(r.event.evidence["ask"])
        async for r in read(bus, subjects=[project_subjects(project)])
        if isinstance(r.event, FindingRaised) and r.event.criterion == ANSWER
    ]


async def test_settled_waits_for_the_effect_and_what_it_published(
    bus: Bus, project: str, system: Actor
) -> None:
    """While an effect runs the sequence is acted on but not settled; once the effect ends,
    wait_settled returns only after the answer it asked for is on the log and folded."""
    daemon = SlowAnswers(project)
    ask = FindingRaised(
        project=project,
        actor=system,
        producer="operator",
        target=RecordTarget(id="01JAAAAAAAAAAAAAAAAAAAAAAA"),
        severity="low",
        criterion=ASK,
        message="please answer",
    )
    async with running(bus, daemon) as kernel:
        seq = (await bus.publish(ask)).seq
        await asyncio.wait_for(kernel.wait_acted(seq), 20)
        await asyncio.wait_for(daemon.started.wait(), 20)
        assert kernel.settled.seq < seq  # decided, but its effect has not ended
        assert await answers(bus, project) == []
        daemon.release.set()
        await asyncio.wait_for(kernel.wait_settled(seq), 20)
        assert await answers(bus, project) == [ask.id]
        assert kernel.project_states(project)["asks"].open == []
        assert kernel.settled.seq >= kernel.folded > seq  # the answer itself is folded too


class Repeats(Daemon):
    """A decision that never sees its own answer count: it publishes the same answer (same
    id, so the server stores it once) every time the project changes."""

    name = "repeats"
    folds = (ASKS,)

    def __init__(self, project: str) -> None:
        super().__init__(projects=[project])
        self.decisions = 0

    def decide(self, world: World) -> Sequence[Intent]:
        self.decisions += 1
        return [
            Publish(
                FindingRaised(
                    id=answer_id("01JAAAAAAAAAAAAAAAAAAAAAAA", "repeat"),
                    project=world.project,
                    actor=self.actor,
                    producer="standards",
                    target=RecordTarget(id="01JAAAAAAAAAAAAAAAAAAAAAAA"),
                    severity="low",
                    criterion="repeat",
                    message="the same answer again",
                )
            )
        ]


async def test_a_repeated_answer_already_folded_does_not_keep_the_project_dirty(
    bus: Bus, project: str, system: Actor
) -> None:
    """Publishing an event that is already on the log and folded (acked as a duplicate)
    changes nothing, so the kernel settles instead of deciding the same thing again after
    every record; a later change is still decided once."""
    daemon = Repeats(project)

    def poke(message: str) -> FindingRaised:
        return FindingRaised(
            project=project,
            actor=system,
            producer="operator",
            target=RecordTarget(id="01JBBBBBBBBBBBBBBBBBBBBBBB"),
            severity="low",
            criterion=ASK,
            message=message,
        )

    async with running(bus, daemon) as kernel:
        first = (await bus.publish(poke("one"))).seq
        await asyncio.wait_for(kernel.wait_settled(first + 1), 20)  # its answer folded too
        assert not kernel.dirty
        decided = daemon.decisions
        second = (await bus.publish(poke("two"))).seq
        await asyncio.wait_for(kernel.wait_settled(second), 20)
        assert daemon.decisions == decided + 1  # once for the change, not again for the copy
        assert not kernel.dirty
        # Copies asked for, each logged: once when its own answer was folded back, once
        # after the second change.
        assert kernel.repeated == 2
        stored = [
            r.event
            async for r in read(bus, subjects=[project_subjects(project)])
            if isinstance(r.event, FindingRaised) and r.event.criterion == "repeat"
        ]
        assert len(stored) == 1
