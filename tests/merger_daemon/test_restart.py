"""A merger killed between moving trunk and recording it resumes without losing or repeating
the effect: the trunk ref and the log end up telling one story."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import ClassVar

import pytest
from merger_scene import WAIT_S, Scene, make_collision, make_trunk

from projections.intents import Intent
from schemas import FindingRaised, UnitTransitioned
from schemas.merges import MergeReverted, TrunkAdvanced
from workers.merger.daemon import Merger
from workers.merger.effects import Land, MergerEffect, Revert


class Crashing(Merger):
    """Dies right after the effect ``fatal`` moved trunk, before its record reaches the log:
    the effect never returns (so nothing is published) and the test then kills the daemon."""

    fatal: ClassVar[type[MergerEffect] | None] = None
    died: asyncio.Event

    async def perform(self, effect: MergerEffect) -> Sequence[Intent]:
        intents = await super().perform(effect)
        if self.fatal is not None and isinstance(effect, self.fatal) and intents:
            self.died.set()
            await asyncio.Event().wait()  # dead: the record is never handed back
        return intents


class CrashAfterAdvance(Crashing):
    """Dies right after moving trunk to a merge, before the advance reaches the log."""

    fatal = Land


class CrashAfterRevert(Crashing):
    """Dies right after moving trunk to a revert, before the revert reaches the log."""

    fatal = Revert


async def _crash(scene: Scene, crashing: type[Crashing], window: int = 3) -> None:
    """Run ``crashing`` until it dies, then kill it (the process is gone)."""
    crashing.died = asyncio.Event()
    await scene.start(window=window, daemon=crashing)
    await asyncio.wait_for(crashing.died.wait(), WAIT_S)
    await scene.stop()


async def _crash_then_restart(scene: Scene, crashing: type[Crashing]) -> None:
    await _crash(scene, crashing)
    await scene.start()


@pytest.mark.parametrize("window", [1, 3])
async def test_restart_after_moving_trunk_records_the_advance_once(
    scene: Scene, window: int
) -> None:
    """Killed after moving trunk, the merger restarts, records its own merge once, finishes."""
    base = make_trunk(scene)
    head = scene.repo.commit(base, {"helper.py": "def helper():\n    return 1\n"}, "helper")
    await scene.ready_unit("U1", head)
    await scene.approve("U1", head)
    await _crash(scene, CrashAfterAdvance, window=window)
    moved = scene.repo.trunk()
    assert scene.repo.parents(moved) == [base, head]
    assert await scene.events(TrunkAdvanced) == []

    await scene.start(window=window)
    await scene.until(lambda: scene.state_of("U1") == "done")
    [advanced] = await scene.events(TrunkAdvanced)
    assert advanced.merge == moved == scene.repo.trunk()
    merged = [e for e in await scene.events(UnitTransitioned) if e.by == "merged"]
    assert len(merged) == 1


async def test_restart_after_reverting_records_the_revert_and_finding_once(scene: Scene) -> None:
    """Killed after reverting trunk, the merger restarts and records the revert and finding once."""
    _base, u0, u1 = make_collision(scene)
    for unit, head in (("U0", u0), ("U1", u1)):
        await scene.ready_unit(unit, head)
        await scene.approve(unit, head)
    await _crash_then_restart(scene, CrashAfterRevert)
    await scene.until(
        lambda: scene.merges.reverted == 1 and scene.units.units["U1"].by == "returned"
    )

    [reverted] = await scene.events(MergeReverted)
    assert reverted.unit == "U1" and reverted.revert == scene.repo.trunk()
    red = [f for f in await scene.events(FindingRaised) if f.cls == "trunk-red"]
    assert [f.id for f in red] == [reverted.finding]
    assert red[0].evidence["reverted_by"] == reverted.revert
