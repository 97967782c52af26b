"""`loopbus status --unit U`, run as an operator runs it: the projector's views, read by the
command, show a decision that waits on the operator as the table docs/agents.md promises."""

from __future__ import annotations

import asyncio

from kernelkit import running

from bus import Bus
from schemas import Actor, Block, UnitPlanned, UnitTransitioned
from schemas.builds import DecisionOption
from schemas.decisions import DecisionRequested
from schemas.slices import UnitDispatched
from workers.projector.daemon import ProjectorDaemon

from .conftest import loopbus

SYSTEM = Actor(role="system", principal="tests")
P = "shop"


async def test_status_unit_shows_the_options_of_a_decision_waiting_on_the_operator(
    own_bus: Bus,
) -> None:
    """A builder's novel decision routed to the operator: `status --unit` prints the
    question, each option with its trade-offs (the recommended one marked) and the
    `loopbus decide` line that settles it."""
    requested = DecisionRequested(
        project=P, actor=SYSTEM, unit="U1", decision_id="rounding",
        question="round totals to cents?",
        options=[
            DecisionOption(id="cents", summary="round half even", user_impact="exact money"),
            DecisionOption(id="raw", summary="keep floats", performance="no cost"),
        ],
        recommended_default="cents", confidence="med", reasoning="money is shown to people",
        routed="operator",
    )  # fmt: skip
    waits = Block(reason="awaiting-operator", subject="01JD5Q7X3M0000000000000000")
    blocked = UnitTransitioned(
        project=P, actor=SYSTEM, unit="U1", state="blocked", prior="working", by="blocked",
        block=waits,
    )  # fmt: skip
    dispatched = UnitDispatched(
        project=P, actor=SYSTEM, slice="S1", unit="U1", wave=0, sub_wave=0, position=0,
        attempt=1, base="a" * 40,
    )  # fmt: skip
    started = UnitTransitioned(project=P, actor=SYSTEM, unit="U1", state="working", by="started")
    planned = UnitPlanned(project=P, actor=SYSTEM, unit="U1", slice="S1")
    for event in (planned, dispatched, started, requested, blocked):
        last = (await own_bus.publish(event)).seq
    projector = ProjectorDaemon(own_bus)
    async with running(own_bus, projector):
        async with asyncio.timeout(30):
            while projector.checkpoint < last:
                await asyncio.sleep(0.05)
    done = await asyncio.to_thread(
        loopbus, "status", "--project", P, "--unit", "U1", "--nats-url", own_bus.url
    )
    assert done.code == 0, done.err
    lines = done.out.splitlines()
    assert "  decision rounding waits on the operator: round totals to cents? (confidence med)" in (
        lines
    ), done.out
    assert "    option | summary | user_impact | performance | speed | cost" in lines
    assert "    cents (recommended) | round half even | exact money | - | - | -" in lines
    assert "    raw | keep floats | - | no cost | - | -" in lines
    assert "    settle it: loopbus decide --unit U1 --decision rounding --choose OPTION" in lines
