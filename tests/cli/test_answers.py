"""`--wait` prints the system's answer to a claim, never an agent's look-alike."""

from __future__ import annotations

import asyncio

from loopbus.bus import Bus
from loopbus.projections.lifecycle import ANSWERS_CLAIM
from loopbus.schemas import Actor, FindingRaised, parse_target
from loopbus.schemas.ids import new_id
from loopbus.schemas.lifecycle import FindingClaim, FindingDismissed

from loopbus.answers import wait_for_answer
from loopbus.commands.finding import _answer

OPERATOR = Actor(role="operator", principal="olive")
AGENT = Actor(role="reviewer", principal="mallory")
SYSTEM = Actor(role="system", principal="ratchet@test:1")


async def test_an_agents_look_alike_answer_is_not_taken_for_the_systems(
    bus: Bus, project: str, capsys
) -> None:  # type: ignore[no-untyped-def]
    claim = FindingClaim(
        project=project, actor=OPERATOR, finding=new_id(), action="dismiss",
        reason="false-positive", why="the lint is wrong here",
    )  # fmt: skip
    await bus.publish(claim)
    waiting = asyncio.create_task(
        wait_for_answer(bus, project, lambda e: _answer(e, claim), 20, "ratchet")
    )
    # A reviewer's finding that carries the claim's id and reads like an acceptance.
    await bus.publish(
        FindingRaised(
            project=project, actor=AGENT, producer="reviewer",
            target=parse_target("code:src/app.py:1-2"), severity="low", criterion="C1",
            message="refused: dismissal needs two operators", evidence={ANSWERS_CLAIM: claim.id},
        )
    )  # fmt: skip
    await asyncio.sleep(0.5)
    assert not waiting.done()  # the look-alike did not answer it
    await bus.publish(
        FindingDismissed(
            project=project, actor=SYSTEM, finding=claim.finding, reason="false-positive",
            why=claim.why, claim=claim.id, by="operator:olive",
        )
    )  # fmt: skip
    assert await waiting == 0
    assert capsys.readouterr().out.strip() == "dismissed (false-positive) by operator:olive"
