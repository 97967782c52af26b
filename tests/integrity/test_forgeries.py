"""A forgery reaches no state and is named in one finding, once, across restarts."""

from __future__ import annotations

import asyncio

from kernelkit import running

from bus import Bus, read
from projections import units as units_fold
from schemas import Actor, FindingRaised, UnitPlanned, UnitTransitioned, project_subjects
from schemas.units import Outcome
from workers.integrity.daemon import Integrity
from workers.kernel import Kernel

SYSTEM = Actor(role="system", principal="tests")
EVIL = Actor(role="builder", principal="evil")


async def log(bus: Bus, project: str) -> list:
    return [r.event async for r in read(bus, subjects=[project_subjects(project)]) if r.event]


async def named(kernel: Kernel, project: str, count: int) -> None:
    state = lambda: kernel.project_states(project)["integrity"]  # noqa: E731
    await kernel.until(lambda: state().reported >= count and not state().unreported, 20)


async def test_each_forgery_is_named_once_and_applied_by_nothing(bus: Bus, project: str) -> None:
    """A builder publishing 'done' for its unit, and a refusal finding of its own making:
    neither changes any state; each gets one system finding naming the forger, and a
    restarted integrity daemon raises none again."""
    await bus.publish(UnitPlanned(project=project, actor=SYSTEM, unit="U1", slice="S1"))
    done = UnitTransitioned(
        project=project, actor=EVIL, unit="U1", state="done", by="merged",
        outcome=Outcome(summary="trust me", ended_by="merge"),
    )  # fmt: skip
    await bus.publish(done)
    async with running(bus, Integrity(projects=[project])) as kernel:
        await named(kernel, project, 1)
    async with running(bus, Integrity(projects=[project])) as kernel:
        await asyncio.wait_for(kernel.wait_acted(await bus.stream_last_seq()), 20)
    events = await log(bus, project)
    forgeries = [e for e in events if isinstance(e, FindingRaised) and e.cls == "forgery"]
    assert len(forgeries) == 1
    (finding,) = forgeries
    assert finding.actor.role == "system" and finding.owner == "operator"
    assert finding.evidence == {
        "forged": done.id,
        "kind": "unit.transitioned.v1",
        "forger": "builder:evil",
    }
    assert units_fold.FOLD.fold(events).units["U1"].state is None


async def test_a_claim_filed_under_another_principal_is_refused_by_the_reader(
    bus: Bus, project: str
) -> None:
    """The principal of a claim is the one on its subject (which the server lets only that
    credential publish to): a body naming someone else is misfiled, and no fold sees it."""
    from schemas import encode_event
    from schemas.reports import StartedReport

    claim = StartedReport(
        project=project, actor=Actor(role="builder", principal="alice"), unit="U1"
    )
    await bus.js.publish(
        f"loop.{project}.claim.builder.mallory.report.builder.U1", encode_event(claim)
    )
    (record,) = [r async for r in read(bus, subjects=[project_subjects(project)])]
    assert record.event is None and record.error is not None
    assert "belongs on" in str(record.error) and "claim.builder.alice" in str(record.error)
