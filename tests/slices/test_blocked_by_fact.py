"""Durable decisions and blocked-by-fact on a real server, with the ratchet daemon (which
records operators' decisions and raises decision-stale) and the dispatcher (which holds,
routes and resolves blocked-by-fact findings) running together on a real git repository."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from kernelkit import running
from slice_helpers import OPERATOR, PLANNER, loopbus_toml, make_repo, of_type, plan, unit

from bus import Bus, read
from schemas import Actor, Event, FindingRaised, FindingResolved, project_subjects
from schemas.decisions import BlockedRouted, DecisionRecorded, ObjectiveDeclared
from schemas.slices import PlanSubmission, SlicePlanDiscarded, UnitDispatched
from schemas.targets import DecisionTarget, PlanTarget
from workers.dispatcher.daemon import Dispatcher
from workers.dispatcher.repo import ProjectRepo
from workers.ratchet.daemon import Ratchet
from workers.ratchet.decisions import record_id
from workers.ratchet.policy import Policy

BUILDER = Actor(role="builder", principal="b1")


@contextlib.asynccontextmanager
async def loop(bus: Bus, project: str, tmp_path: Path) -> AsyncIterator[None]:
    """The ratchet daemon and a dispatcher (with a repository) following the log."""
    path = tmp_path / "repo"
    make_repo(path, {"loopbus.toml": loopbus_toml(project, [], None), "README.md": "hi\n"})
    dispatcher = Dispatcher(bus, projects=[project], repos={project: ProjectRepo(path)})
    async with running(bus, Ratchet(Policy(), projects=[project])), running(bus, dispatcher):
        yield


async def log_of(bus: Bus, project: str) -> list[Event]:
    records = read(bus, subjects=[project_subjects(project)])
    return [r.event async for r in records if r.event is not None]


async def until(bus: Bus, project: str, holds: Callable[[list[Event]], bool]) -> list[Event]:
    """The log once ``holds`` is true of it (bounded: a daemon that never acts fails)."""
    async with asyncio.timeout(30):
        while not holds(events := await log_of(bus, project)):
            await asyncio.sleep(0.05)
    return events


def dispatched(events: list[Event]) -> list[str]:
    return [e.unit for e in of_type(events, UnitDispatched)]


def stale(events: list[Event]) -> list[FindingRaised]:
    return [e for e in of_type(events, FindingRaised) if e.cls == "decision-stale"]


async def decide(bus: Bus, project: str, chosen: str, supersedes: str | None = None) -> str:
    """An operator's decision claim about src/a.py; the id of the system's record of it."""
    claim = DecisionRecorded(
        project=project, actor=OPERATOR, question="which parser?", options=["re", "peg"],
        chosen=chosen, owner="operator", serves="O1", files=["src/a.py"],
        supersedes=supersedes,
    )  # fmt: skip
    await bus.publish(claim)
    await until(bus, project, lambda es: record_id(claim.id) in {e.id for e in es})
    return record_id(claim.id)


async def test_superseding_a_decision_makes_it_stale_for_the_units_briefed_with_it(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    """A unit dispatched while a decision bearing on its file is in force is briefed with
    it; superseding the decision raises decision-stale naming the decision, the fact and
    that unit (not the unit on another file)."""
    await bus.publish(ObjectiveDeclared(project=project, actor=OPERATOR, objective="O1"))
    async with loop(bus, project, tmp_path):
        first = await decide(bus, project, "re")
        p = plan("S1", unit("A"), unit("C"))
        await bus.publish(PlanSubmission(project=project, actor=PLANNER, plan=p))
        await until(bus, project, lambda es: sorted(dispatched(es)) == ["A", "C"])
        second = await decide(bus, project, "peg", supersedes=first)
        events = await until(bus, project, lambda es: bool(stale(es)))
    [finding] = stale(events)
    assert finding.target == DecisionTarget(decision=first)
    assert finding.evidence["fact"] == second
    assert finding.evidence["units"] == ["A"] and finding.evidence["slices"] == ["S1"]
    [record] = [e for e in of_type(events, DecisionRecorded) if e.id == first]
    assert record.actor.role == "system" and record.claim is not None


async def test_blocked_by_fact_on_a_decision_holds_its_units_until_a_decision_answers_it(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    """A blocked-by-fact naming a decision stops dispatch of the units it bears on (A), not
    the others (C); it is routed to the planner, makes the decision stale, and once a
    superseding decision answers it, it is resolved and A is dispatched."""
    await bus.publish(ObjectiveDeclared(project=project, actor=OPERATOR, objective="O1"))
    async with loop(bus, project, tmp_path):
        first = await decide(bus, project, "re")
        blocked = FindingRaised(
            project=project, actor=BUILDER, producer="builder", cls="blocked-by-fact",
            target=DecisionTarget(decision=first), severity="high",
            message="the input is not regular",
        )  # fmt: skip
        await bus.publish(blocked)
        p = plan("S1", unit("A"), unit("C"))
        await bus.publish(PlanSubmission(project=project, actor=PLANNER, plan=p))
        events = await until(
            bus, project, lambda es: dispatched(es) == ["C"] and bool(of_type(es, BlockedRouted))
        )
        [routed] = of_type(events, BlockedRouted)
        assert routed.finding == blocked.id and routed.owner == "planner"
        assert routed.via == "reconnaissance"
        assert [f.evidence["fact"] for f in stale(events)] == [blocked.id]
        await decide(bus, project, "peg", supersedes=first)
        events = await until(bus, project, lambda es: "A" in dispatched(es))
    [resolved] = [e for e in of_type(events, FindingResolved) if e.finding == blocked.id]
    assert "supersedes" in resolved.why
    first_dispatch_of_a = next(e for e in of_type(events, UnitDispatched) if e.unit == "A")
    assert events.index(resolved) < events.index(first_dispatch_of_a)


async def test_blocked_by_fact_on_a_plan_stops_dispatch_until_a_new_plan_answers_it(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    """A blocked-by-fact on plan:S1 stops B (waiting on A) from being dispatched: the plan is
    routed and discarded; a new plan for S1 answers it, the finding is resolved and the new
    plan's unit is dispatched."""
    async with loop(bus, project, tmp_path):
        p = plan("S1", unit("A"), unit("B", "A"))
        await bus.publish(PlanSubmission(project=project, actor=PLANNER, plan=p))
        await until(bus, project, lambda es: dispatched(es) == ["A"])
        blocked = FindingRaised(
            project=project, actor=OPERATOR, producer="operator", cls="blocked-by-fact",
            target=PlanTarget(slice="S1"), severity="high", message="the API has no bulk call",
        )  # fmt: skip
        await bus.publish(blocked)
        events = await until(bus, project, lambda es: bool(of_type(es, SlicePlanDiscarded)))
        assert of_type(events, BlockedRouted)[0].reached == ["A", "B"]
        assert not [e for e in of_type(events, FindingResolved) if e.finding == blocked.id]
        amended = plan("S1", unit("B2"))
        await bus.publish(PlanSubmission(project=project, actor=PLANNER, plan=amended))
        events = await until(bus, project, lambda es: "B2" in dispatched(es))
    assert dispatched(events) == ["A", "B2"]
    [resolved] = [e for e in of_type(events, FindingResolved) if e.finding == blocked.id]
    assert "S1" in resolved.why
