"""A recurring lesson drafts a gate that, once the operator approves it, lands in trunk's
loopbus.toml and runs on the next unit's gate — on a real server, with the real merger,
gate runner, ratchet and lessons daemons, and a real repository.

Two slices each have a unit whose merge candidate turns the same test red (a real red
candidate, tested by the merger's gate runner). Each slice's close records its lessons
(the round the red was caught in, the unit-level check that would have shown it); the
second makes the lesson recur, which drafts a gate through the ratchet. An agent cannot
approve it; the operator does, and the merger installs it as a check that the next
unit's merge candidate runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from kernelkit import running
from lessonkit import TEST, closed, dispatched, round_closed
from merger_scene import APP, Scene, make_trunk

from projections import contract_landing, lessons, ratchet
from schemas import Actor, FindingRaised
from schemas.contract import ContractLanded
from schemas.merges import CandidateTested
from schemas.ratchet import GateMoveClaim, GateMoved, GateProposed
from workers import history
from workers.kernel import Kernel
from workers.lessons.daemon import Lessons
from workers.ratchet.daemon import Ratchet
from workers.ratchet.policy import policy_for

OLIVE = Actor(role="operator", principal="olive")
BUILDER = Actor(role="builder", principal="b1")
BROKEN = {"app.py": "def total(items):\n    return 0\n"}
MEAN = {"app.py": APP + "\n\ndef mean(items):\n    return total(items) / len(items)\n"}
WAIT_S = 120


async def refusals(scene: Scene) -> list[FindingRaised]:
    return [f for f in await scene.events(FindingRaised) if f.cls == "refused-transition"]


async def red_slice(scene: Scene, slice_id: str, unit: str, base: str) -> None:
    """A slice whose one unit passes its review round 1, then turns its merge candidate red
    (the real merger tests it); then the slice closes."""
    await scene.publish(dispatched(scene.project, slice_id, unit))
    await scene.publish(round_closed(scene.project, unit, 1))
    head = scene.repo.commit(base, BROKEN, f"{unit}: total returns 0")
    await scene.ready_unit(unit, head, slice=slice_id)
    await scene.approve(unit, head)
    await scene.until(lambda: unit in scene.merges.reds, WAIT_S)
    await scene.publish(closed(scene.project, slice_id))


@asynccontextmanager
async def learning(scene: Scene) -> AsyncIterator[tuple[Kernel, Kernel]]:
    """The ratchet and lessons daemons beside the scene's merger."""
    policy = policy_for(None, "catalogue", [])
    async with (
        running(scene.bus, Ratchet(policy, projects=[scene.project])) as gates,
        running(scene.bus, Lessons(projects=[scene.project])) as learned,
    ):
        yield gates, learned


async def test_a_recurring_lesson_drafts_a_gate_the_operator_installs_and_the_next_unit_runs(
    scene: Scene,
) -> None:
    base = make_trunk(scene)
    await scene.start()
    await scene.until(lambda: scene.merges.trunk.green_commit == base)
    async with learning(scene) as (gates, learned):
        known: lessons.LessonsState = learned.project_states(scene.project)["lessons"]
        await red_slice(scene, "S1", "A", base)
        await learned.until(lambda: "S1" in known.recorded, WAIT_S)
        [lesson] = known.recorded["S1"].lessons
        assert (lesson.kind, lesson.cls, lesson.unit, lesson.round) == (
            "trunk-red", f"trunk-red:{TEST}", "A", 1,
        )  # fmt: skip
        assert lesson.caught_by == "the trunk gate (tests) on the candidate"
        assert lesson.sooner.startswith(f"a unit-level check running {TEST}")
        assert lessons.recurring(known) == []  # once is not a recurrence

        await red_slice(scene, "S2", "B", base)
        gate = lessons.gate_id(f"trunk-red:{TEST}")
        moved: ratchet.RatchetState = gates.project_states(scene.project)["ratchet"]
        await gates.until(lambda: ratchet.current(moved, "local", gate) == "Drafted", WAIT_S)
        [proposed] = await scene.events(GateProposed)
        assert proposed.gate == gate and proposed.check.endswith(TEST)
        assert proposed.investigation == known.recorded["S2"].id

        # An agent cannot approve it: the ratchet refuses, nothing is installed.
        agent = GateMoveClaim(
            project=scene.project, actor=BUILDER, gate=gate, scope="local", move="approve",
            why="looks fine to me",
        )  # fmt: skip
        await scene.publish(agent)
        # The ratchet's answer is a refusal finding naming the claim (the claim may never
        # be pending at all: wait for the answer itself, not for the claim to leave).
        async with asyncio.timeout(WAIT_S):
            while not any(agent.id in str(f.evidence) for f in await refusals(scene)):
                await asyncio.sleep(0.05)
        assert ratchet.current(moved, "local", gate) == "Drafted"

        approve = GateMoveClaim(
            project=scene.project, actor=OLIVE, gate=gate, scope="local", move="approve",
            why="it would have caught both reds",
        )  # fmt: skip
        await scene.publish(approve)
        await gates.until(lambda: ratchet.current(moved, "local", gate) == "Local", WAIT_S)

    [approved] = [m for m in await scene.events(GateMoved) if m.move == "approve"]
    assert approved.authority == "operator:olive"
    assert scene.kernel is not None
    contracts: contract_landing.ContractState = scene.kernel.project_states(scene.project)[
        contract_landing.FOLD.name
    ]
    install = f"{contract_landing.GATE_KEY}{gate}"
    await scene.until(
        lambda: install in contracts.slices and contracts.slices[install].landed is not None,
        WAIT_S,
    )
    [landing] = [c for c in await scene.events(ContractLanded) if c.checks == [gate]]
    assert landing.accepted == approved.id  # the operator's approval, and nothing else
    trunk = scene.repo.trunk()
    assert trunk == landing.commit
    config = scene.repo.files(trunk)["loopbus.toml"]
    assert f'id = "{gate}"' in config and TEST in config
    assert history.trailers(scene.repo.path, trunk)["Loopbus-Contract"] == f"gate-{gate}"

    # The next unit's merge candidate runs the installed check.
    head = scene.repo.commit(trunk, MEAN, "C: mean")
    await scene.ready_unit("C", head, slice="S3")
    await scene.approve("C", head)
    await scene.until(lambda: scene.merges.merged >= 1, WAIT_S)
    [tested] = [
        c for c in await scene.events(CandidateTested) if c.unit == "C" and c.stage == "candidate"
    ]
    assert tested.green and {v.check: v.outcome for v in tested.checks}[gate] == "pass"
