"""The operator page shows each closed slice's risk report, least verified first."""

from __future__ import annotations

import time

from pagekit import PageServer

from bus import Bus
from schemas import Actor, UnitPlanned
from schemas.slices import (
    BootResult,
    CommandRun,
    NotRun,
    PlannedUnit,
    PlanSubmission,
    RunEntryCompleted,
    SliceClosed,
    SlicePlan,
    SlicePlanAccepted,
    UnitDispatched,
)

SYSTEM = Actor(role="system", principal="tests")
PLANNER = Actor(role="planner", principal="planner-1")


async def test_the_page_lists_an_unrun_check_before_what_passed(
    bus: Bus, project: str, page_server: PageServer
) -> None:
    """A closed slice whose unit never ran `docs`: the page's risk report names it as not
    run, ahead of the one check that ran and passed, and names no command for it."""
    plan = SlicePlan(slice="S1", units=[PlannedUnit(id="U1", title="add total")])
    submission = PlanSubmission(project=project, actor=PLANNER, plan=plan)
    dispatched = UnitDispatched(
        project=project, actor=SYSTEM, slice="S1", unit="U1", wave=0, sub_wave=0, position=0
    )
    for event in (
        submission,
        SlicePlanAccepted(project=project, actor=SYSTEM, plan=plan, cause=submission.id),
        UnitPlanned(project=project, actor=SYSTEM, unit="U1", slice="S1"),
        dispatched,
        RunEntryCompleted(
            project=project,
            actor=SYSTEM,
            slice="S1",
            unit="U1",
            dispatch=dispatched.id,
            state="done",
            commands=[CommandRun(check="tests", command="pytest -q", outcome="pass")],
            not_run=[NotRun(what="docs", why="in loopbus.toml but in no suite run")],
        ),
        SliceClosed(project=project, actor=SYSTEM, slice="S1", boot=BootResult(outcome="pass")),
    ):
        await bus.publish(event)
    deadline = time.monotonic() + 30
    reports: list = []
    while time.monotonic() < deadline and not reports:
        reports = page_server.json(f"/api/overview?project={project}")["risk"]
        time.sleep(0.1)
    [report] = reports
    assert report["slice"] == "S1"
    texts = [(item["band"], item["text"]) for item in report["items"]]
    assert ("not-run", "unit U1: docs: in loopbus.toml but in no suite run") in texts
    assert texts[-1] == ("verified", "unit U1: check tests (pytest -q) passed")
    bands = [band for band, _ in texts]
    assert bands.index("not-run") < bands.index("verified")
