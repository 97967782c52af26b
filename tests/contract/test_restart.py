"""A merger killed between moving trunk to a contract commit and recording it recognises
its commit by the trailers when it starts again and records the landing once: the commit
is not taken for an outside push (no tampering red, no restore)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from merger_scene import WAIT_S, Scene, make_trunk

from projections.intents import Intent
from schemas import Actor, FindingRaised
from schemas.adoption import ConfigAdopted
from schemas.contract import ContractChanges, ContractLanded, NewCriterion
from schemas.merges import MergeReverted
from schemas.slices import PlannedUnit, SlicePlan, SlicePlanAccepted
from workers.merger.daemon import Merger
from workers.merger.effects import LandContract, MergerEffect

SYSTEM = Actor(role="system", principal="tests")
TEST = "tests/test_more.py::test_more"
TEXT = "def test_more():\n    assert False, 'not yet'\n"


class CrashAfterContract(Merger):
    """Dies right after moving trunk to the contract commit, before the facts are out."""

    died: asyncio.Event

    async def perform(self, effect: MergerEffect) -> Sequence[Intent]:
        intents = await super().perform(effect)
        if isinstance(effect, LandContract) and intents:
            self.died.set()
            await asyncio.Event().wait()  # dead: the record is never handed back
        return intents


async def test_restart_after_landing_a_contract_records_it_once(scene: Scene) -> None:
    base = make_trunk(scene)
    plan = SlicePlan(
        slice="S1",
        units=[PlannedUnit(id="U1", files=["app.py"], criteria=[TEST])],
        contract=ContractChanges(criteria=(NewCriterion(test=TEST, text=TEXT),)),
    )
    await scene.publish(
        SlicePlanAccepted(project=scene.project, actor=SYSTEM, plan=plan, cause="c")
    )
    CrashAfterContract.died = asyncio.Event()
    await scene.start(daemon=CrashAfterContract)
    await asyncio.wait_for(CrashAfterContract.died.wait(), WAIT_S)
    await scene.stop()
    moved = scene.repo.trunk()
    assert scene.repo.parents(moved) == [base] and await scene.events(ContractLanded) == []

    await scene.start()
    await scene.until(
        lambda: (c := scene.merges.trunk.checked) is not None and c.candidate == moved and c.green
    )
    [landed] = await scene.events(ContractLanded)
    assert landed.commit == moved == scene.repo.trunk()
    assert [a.why for a in await scene.events(ConfigAdopted)] == ["first-start", "contract"]
    assert await scene.events(MergeReverted) == []
    assert [f for f in await scene.events(FindingRaised) if f.cls.startswith("trunk")] == []
