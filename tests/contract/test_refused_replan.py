"""A contract the merger refuses at landing is one refused try, not a held slice: against a
real server, the real merger (and gate runner), the real dispatcher and the planner daemon
running a stand-in planner through the agent runner.

The planner's own check passes the first contract on the trunk it read; trunk then moves
(a push adds the very test the contract would add), so the merger refuses it at landing.
The dispatcher discards the plan, the planner is asked again with the merger's reasons,
and the second plan's contract lands."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_TESTS = Path(__file__).resolve().parent.parent
for _folder in (_TESTS / "planner", _TESTS / "reviews"):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

from kernelkit import running  # noqa: E402
from logkit import of, wait_log  # noqa: E402
from merger_scene import Scene, make_trunk  # noqa: E402
from plannerkit import check_criteria, planner, start_charter  # noqa: E402

from schemas import FindingRaised, FindingResolved  # noqa: E402
from schemas.contract import ContractLanded  # noqa: E402
from schemas.planning import PlanProposed  # noqa: E402
from schemas.slices import SlicePlanAccepted, SlicePlanDiscarded  # noqa: E402
from workers.agents.config import parse  # noqa: E402
from workers.dispatcher.daemon import Dispatcher  # noqa: E402
from workers.dispatcher.repo import ProjectRepo  # noqa: E402
from workers.planner.daemon import Planner  # noqa: E402

WAIT_S = 120
DOUBLE = "tests/test_double.py::test_double"
DOUBLE_TEXT = """\
import app


def test_double():
    assert app.double([1, 2]) == 6
"""
TRIPLE = "tests/test_triple.py::test_triple"
TRIPLE_TEXT = """\
import app


def test_triple():
    assert app.total([1, 2]) * 3 == 9
"""
PUSHED_DOUBLE = """\
def test_double():
    assert [1, 2] * 2 == [1, 2, 1, 2]
"""


@pytest.fixture
def agent_dir() -> Iterator[Path]:
    """A folder stand-in agents can use even when the sandbox runs them as another user."""
    path = Path(tempfile.mkdtemp(prefix="loopbus-agent-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def plan_with(slice_id: str, unit: str, test: str, text: str) -> dict[str, Any]:
    return {
        "slice": {"id": slice_id},
        "unit": [{"id": unit, "files": ["app.py"], "criteria": [test]}],
        "contract": {"criteria": [{"test": test, "text": text}]},
    }


async def test_a_contract_refused_at_landing_discards_the_plan_and_the_planner_replans(
    scene: Scene, agent_dir: Path
) -> None:
    base = make_trunk(scene)
    project, bus = scene.project, scene.bus
    stand_in = planner(
        agent_dir,
        {
            "S1": [
                plan_with("S1", "U1", DOUBLE, DOUBLE_TEXT),
                plan_with("S1", "U2", TRIPLE, TRIPLE_TEXT),
            ]
        },
    )
    table = (
        f'\n[plan]\ncommand = "{stand_in.command}"\nmax_tries = 2\n'
        f'\n[agents]\nwritable = ["{agent_dir}"]\n'
    )
    config = parse(scene.config() + table, repo=str(scene.repo.path))
    dispatcher = Dispatcher(
        bus, repos={project: ProjectRepo(scene.repo.path, trunk="main")}, projects=[project]
    )
    async with (
        running(bus, dispatcher),
        running(bus, Planner({project: config}, poll_s=0.1)),
    ):
        run = await start_charter(bus, project, base)
        await wait_log(bus, project, lambda es: bool(of(SlicePlanAccepted, es)), WAIT_S)
        # Trunk moves before the merger lands the contract: the test it would add is there.
        pushed = scene.repo.commit(base, {"tests/test_double.py": PUSHED_DOUBLE})
        scene.repo.set_trunk(pushed)
        await check_criteria(bus, project, run, pushed)
        await scene.start()
        events = await wait_log(
            bus,
            project,
            lambda es: bool(of(ContractLanded, es)) and bool(of(FindingResolved, es)),
            WAIT_S,
        )

    [refusal] = [f for f in of(FindingRaised, events) if f.criterion.startswith("contract-")]
    assert (refusal.actor.role, refusal.owner, refusal.slice) == ("system", "planner", "S1")
    assert "test_double" in refusal.message and "asked again" in refusal.message
    # Answered by the second plan: resolved, so later briefs no longer list it as open.
    [resolved] = of(FindingResolved, events)
    assert resolved.finding == refusal.id and resolved.actor.role == "system"
    [discarded] = of(SlicePlanDiscarded, events)
    assert (discarded.slice, discarded.cause) == ("S1", refusal.id)
    first, second = of(PlanProposed, events)
    assert (first.attempt, second.attempt) == (1, 2)
    briefs = stand_in.calls()
    assert [b["attempt"] for b in briefs] == [1, 2]
    assert briefs[1]["refusals"] and all(
        r.startswith("try 1: the merger refused the contract at landing")
        for r in briefs[1]["refusals"]
    )
    assert any("test_double" in r for r in briefs[1]["refusals"])
    accepted = of(SlicePlanAccepted, events)
    assert [a.plan.units[0].id for a in accepted] == ["U1", "U2"]
    [landed] = of(ContractLanded, events)
    assert (landed.slice, landed.accepted, landed.criteria) == ("S1", accepted[1].id, [TRIPLE])
