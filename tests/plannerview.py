"""A charter whose planner has been at work, as the log holds it — reconnaissance recorded,
one refused try, a supervised proposal awaiting approval — and the real projector folding
it, for the tests of what ``status`` and the operator page show of the planner."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from bus import Bus, Views
from schemas import Actor, Event
from schemas.charter import Charter, CharterApproved, CharterCriterion, RunCriteriaChecked
from schemas.planning import PlanAttemptRefused, PlanProposed, ReconFact, ReconRecorded
from schemas.slices import PlannedUnit, SlicePlan

SYSTEM = Actor(role="system", principal="tests")
CYCLE = "dependency cycle: U1 -> U2 -> U1"


def planner_events(project: str) -> list[Event]:
    charter = Charter(
        id="C1",
        title="totals",
        criteria=(CharterCriterion(id="total", text="it totals", test="tests/t.py::test_t"),),
        autonomy="supervised",
    )
    approved = CharterApproved(project=project, actor=SYSTEM, charter=charter)
    checked = RunCriteriaChecked(
        project=project, actor=SYSTEM, run=approved.id, charter="C1", trunk="c" * 40
    )
    recon = ReconRecorded(
        project=project,
        actor=SYSTEM,
        charter="C1",
        facts=[ReconFact(id="F1", text="tests live in tests/"), ReconFact(id="F2", text="x")],
    )
    refused = PlanAttemptRefused(
        project=project,
        actor=SYSTEM,
        slice="S1",
        charter="C1",
        attempt=1,
        problems=[CYCLE, "the plan has no owner for tests/t.py::test_t"],
        basis=recon.id,
    )
    plan = SlicePlan(slice="S1", units=[PlannedUnit(id="U1"), PlannedUnit(id="U2")])
    proposed = PlanProposed(
        project=project,
        actor=SYSTEM,
        slice="S1",
        charter="C1",
        attempt=2,
        plan=plan,
        autonomy="supervised",
        basis=recon.id,
    )
    return [approved, checked, recon, refused, proposed]


async def fold_with_projector(bus: Bus, nats_url: str) -> None:
    """Run the projector until it has folded the whole log."""
    last = await bus.stream_last_seq()
    projector = subprocess.Popen(
        [sys.executable, "-m", "workers.projector", "--nats-url", nats_url],
        stderr=subprocess.DEVNULL,
    )
    try:
        views = await Views.open(bus)
        for _ in range(600):
            if (await views.checkpoint()).seq >= last:
                return
            await asyncio.sleep(0.1)
        raise AssertionError("the projector did not fold the log within a minute")
    finally:
        projector.terminate()
        projector.wait(timeout=10)
