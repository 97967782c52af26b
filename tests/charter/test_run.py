"""The run on a real server: an unapproved charter dispatches nothing; a budget ends the
run; an operator's stop ends it. The dispatcher runs on a real repository."""

from __future__ import annotations

import asyncio
from pathlib import Path

from charterkit import (
    OPERATOR,
    approval,
    charter,
    charter_daemon,
    log_of,
    submission,
    wait_for,
    wait_until,
)
from kernelkit import running
from slice_helpers import PLANNER, accepted, loopbus_toml, make_repo, of_type, plan, unit

from bus import Bus
from schemas import Actor, FindingRaised
from schemas.charter import (
    CharterApproved,
    RunBudgets,
    RunCheckedIn,
    RunEnded,
    RunFinalizing,
    RunStop,
)
from schemas.slices import (
    BootResult,
    PlanSubmission,
    SliceClosed,
    SlicePlanAccepted,
    UnitDispatched,
)
from workers.dispatcher.daemon import Dispatcher
from workers.dispatcher.repo import ProjectRepo


def repo(tmp_path: Path, project: str) -> ProjectRepo:
    path = tmp_path / "repo"
    make_repo(path, {"loopbus.toml": loopbus_toml(project, [], None), "README.md": "hi\n"})
    return ProjectRepo(path)


async def test_an_unapproved_charter_dispatches_nothing(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    """A plan submitted while the charter awaits approval is accepted and planned, but no
    unit is dispatched; once an operator approves the charter, its units go out."""
    sub = submission(project, charter())
    p = plan("S1", unit("A"), unit("B"))
    dispatcher = Dispatcher(bus, repos={project: repo(tmp_path, project)}, projects=[project])
    async with running(bus, dispatcher) as d:
        await bus.publish(sub)
        ack = await bus.publish(PlanSubmission(project=project, actor=PLANNER, plan=p))
        await asyncio.wait_for(d.wait_settled(ack.seq), 30)
        before = await log_of(bus, project)
        assert of_type(before, SlicePlanAccepted), "the plan itself is answered meanwhile"
        assert of_type(before, UnitDispatched) == []
        async with charter_daemon(bus, project):
            await bus.publish(approval(project, sub))
            events = await wait_until(
                bus, project, lambda es: len(of_type(es, UnitDispatched)) == 2
            )
    [approved] = of_type(events, CharterApproved)
    first = of_type(events, UnitDispatched)[0]
    assert events.index(approved) < events.index(first)
    assert sorted(e.unit for e in of_type(events, UnitDispatched)) == ["A", "B"]


async def test_a_wall_clock_budget_ends_the_run_and_then_nothing_is_dispatched(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    """A run with a wall clock of a few seconds checks in, finalizes, then ends on its
    budget; a plan submitted after the end is accepted but not dispatched."""
    sub = submission(project, charter(budgets=RunBudgets(wall_clock="3s")))
    async with charter_daemon(bus, project):
        await bus.publish(sub)
        await bus.publish(approval(project, sub))
        ended = await wait_for(bus, project, RunEnded)
    events = await log_of(bus, project)
    [approved] = of_type(events, CharterApproved)
    [checked_in] = of_type(events, RunCheckedIn)
    [finalizing] = of_type(events, RunFinalizing)
    assert ended.reason == "budget" and "wall clock of 3s" in ended.detail
    assert {checked_in.run, finalizing.run, ended.run} == {approved.id}
    order = [events.index(e) for e in (approved, checked_in, finalizing, ended)]
    assert order == sorted(order)
    dispatcher = Dispatcher(bus, repos={project: repo(tmp_path, project)}, projects=[project])
    async with running(bus, dispatcher) as d:
        # An agent claiming as a planner, past the planner daemon: refused while a charter
        # is in force. An operator's plan is the operator's call: accepted, not dispatched.
        await bus.publish(
            PlanSubmission(project=project, actor=PLANNER, plan=plan("S9", unit("Z")))
        )
        ack = await bus.publish(
            PlanSubmission(project=project, actor=OPERATOR, plan=plan("S8", unit("Y")))
        )
        await asyncio.wait_for(d.wait_settled(ack.seq), 30)
    after = await log_of(bus, project)
    assert [e.plan.slice for e in of_type(after, SlicePlanAccepted)] == ["S8"]
    assert of_type(after, UnitDispatched) == []
    [refused] = [e for e in of_type(after, FindingRaised) if e.criterion == "plan-valid"]
    assert "S9" in refused.message and "through the planner daemon" in refused.message


async def test_the_slices_budget_finalizes_and_ends_the_run_once_the_slice_closes(
    bus: Bus, project: str, system: Actor
) -> None:
    """slices = 1: the first slice accepted under the charter finalizes the run (no new
    slice is planned) and the run ends on its budget once that slice has closed, not
    before. The dispatcher is stood in by the facts it would publish."""
    sub = submission(project, charter(budgets=RunBudgets(slices=1)))
    async with charter_daemon(bus, project) as kernel:
        await bus.publish(sub)
        await bus.publish(approval(project, sub))
        await wait_for(bus, project, CharterApproved)
        for event in accepted(project, plan("S1", unit("A"))):
            await bus.publish(event)
        finalizing = await wait_for(bus, project, RunFinalizing)
        assert "slices budget (1)" in finalizing.detail
        ack = await bus.publish(
            PlanSubmission(project=project, actor=PLANNER, plan=plan("S2", unit("B")))
        )
        await asyncio.wait_for(kernel.wait_acted(ack.seq), 30)
        assert of_type(await log_of(bus, project), RunEnded) == [], "S1 is still open"
        closed = SliceClosed(
            project=project, actor=system, slice="S1", boot=BootResult(outcome="pass")
        )
        await bus.publish(closed)
        ended = await wait_for(bus, project, RunEnded)
    assert ended.reason == "budget" and "no slice is open" in ended.detail


async def test_an_operator_stops_the_run(bus: Bus, project: str) -> None:
    """run.stop from an operator ends the run (stopped, naming the claim)."""
    sub = submission(project, charter())
    async with charter_daemon(bus, project):
        await bus.publish(sub)
        await bus.publish(approval(project, sub))
        await wait_for(bus, project, CharterApproved)
        stop = RunStop(project=project, actor=OPERATOR, why="scope changed")
        await bus.publish(stop)
        ended = await wait_for(bus, project, RunEnded)
    assert (ended.reason, ended.claim, ended.detail) == ("stopped", stop.id, "scope changed")
