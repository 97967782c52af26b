"""A lesson recurring across projects drafts its gate in each of them (on a real server,
the lessons daemon serving two projects and folding both into an aggregate); one recorded
once in one project only, or only as a claim, drafts nothing."""

from __future__ import annotations

import asyncio

from kernelkit import running
from lessonkit import SYSTEM, TEST

from bus import Bus, read
from projections import lessons
from schemas import project_subjects
from schemas.ids import new_id
from schemas.lessons import Lesson, LessonsRecorded
from schemas.ratchet import GateProposed
from workers.lessons.daemon import Lessons

CHECK = f"python -m pytest -q -p no:cacheprovider {TEST}"


def red(cls: str = f"trunk-red:{TEST}", *, claimed: bool = False) -> Lesson:
    return Lesson(
        cls=cls, kind="investigation" if claimed else "trunk-red", what="red", unit="A",
        round=1, caught_by="the trunk gate", sooner="a unit-level check", check=CHECK,
        evidence=[new_id()], claimed=claimed,
    )  # fmt: skip


def record(project: str, slice_id: str, *found: Lesson) -> LessonsRecorded:
    return LessonsRecorded(
        project=project, actor=SYSTEM, slice=slice_id, closed=new_id(), lessons=list(found)
    )


async def proposals(bus: Bus, project: str) -> list[GateProposed]:
    return [
        r.event
        async for r in read(bus, subjects=[project_subjects(project)])
        if isinstance(r.event, GateProposed)
    ]


async def test_a_lesson_in_two_projects_drafts_its_gate_in_each(bus: Bus, project: str) -> None:
    shop, blog, aggregate = f"{project}a", f"{project}b", f"{project}c"
    other = red("review:naming")
    claim = red("trunk-red:tests/test_x.py::test_y", claimed=True)
    records = [
        record(shop, "S1", red(), other, claim),
        record(blog, "S4", red(), claim),
    ]
    daemon = Lessons(projects=[shop, blog], aggregate=aggregate)
    async with running(bus, daemon) as kernel:
        for event in records:
            await bus.publish(event)
        for _ in range(5):  # the drafts are folded back, then decided on again
            await asyncio.wait_for(kernel.wait_acted(await bus.stream_last_seq()), 30)
    gate = lessons.gate_id(f"trunk-red:{TEST}")
    for name, recorded in ((shop, records[0]), (blog, records[1])):
        [proposed] = await proposals(bus, name)
        assert (proposed.gate, proposed.check) == (gate, CHECK)
        assert proposed.investigation == recorded.id  # the project's own record
        assert f"across projects {shop}, {blog}" in proposed.why
    assert await proposals(bus, aggregate) == []
