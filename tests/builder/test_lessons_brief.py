"""The lessons in force travel in a builder's brief: a slice's recorded lessons reach the
next unit's first round — on a real server with the real units and builder daemons."""

from __future__ import annotations

from pathlib import Path

from builderkit import SYSTEM, ScriptedBuilder, configs, daemons, dispatch, of, setup, wait_log

from bus import Bus
from schemas import UnitTransitioned
from schemas.ids import new_id
from schemas.lessons import Lesson, LessonsRecorded

IMPLEMENTED = {"src/app.py": "def total(xs):\n    return sum(xs)\n"}


async def test_a_recorded_lesson_is_in_the_next_unit_s_brief(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    agent = ScriptedBuilder(tmp_path / "agent")
    agent.plan([{"write": IMPLEMENTED}])
    repo, base = setup(tmp_path, project, agent.command)
    lesson = Lesson(
        cls="review:naming", kind="review-finding", what="review blocked on naming at app.py",
        unit="A", round=2, caught_by="review",
    )  # fmt: skip
    recorded = LessonsRecorded(
        project=project, actor=SYSTEM, slice="S0", closed=new_id(), lessons=[lesson]
    )
    async with daemons(nats_url, project, configs(repo, project, agent.command), tmp_path / "data"):
        await bus.publish(recorded)
        await dispatch(bus, project, "U1", base)
        await wait_log(bus, project, lambda es: of(UnitTransitioned, es, unit="U1", by="commit"))
    [call] = agent.calls()
    assert call["brief"]["lessons"] == [
        "[S0] review blocked on naming at app.py (A round 2, caught by review; no gate covers "
        "it yet)"
    ]
