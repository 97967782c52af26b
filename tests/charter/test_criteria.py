"""Criteria judged from a real trunk gate run: the merger gates trunk with the real gate
runner (pytest under the gate plugin) and the charter daemon reads the signed results.

A pending test failing is green for trunk but meets no criterion; a test that does not
exist meets none; a check criterion holds when the check passed; a test that ran and
passed holds."""

from __future__ import annotations

from pathlib import Path

from charterkit import approval, charter, charter_daemon, submission, wait_for
from loopbus.bus import Bus
from loopbus.schemas.charter import CharterCriterion, RunCriteriaChecked
from loopbus.schemas.merges import CandidateTested
from merger_scene import Scene

CALC = "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    raise NotImplementedError\n"
TESTS = """\
from calc import add, div


def test_add():
    assert add(1, 2) == 3


def test_div():
    result = None
    try:
        result = div(6, 3)
    except NotImplementedError:
        pass
    assert result == 2
"""


def config(project: str) -> str:
    return (
        f'[project]\nid = "{project}"\n\n[[check]]\nid = "tests"\n'
        'command = "python -m pytest -q -p no:cacheprovider tests"\nparser = "pytest"\n'
        'pending = ["tests/test_calc.py::test_div"]\ntimeout = 120\n'
    )


CRITERIA = (
    CharterCriterion(id="adds", text="it adds", test="tests/test_calc.py::test_add"),
    CharterCriterion(id="divides", text="it divides", test="tests/test_calc.py::test_div"),
    CharterCriterion(id="ghost", text="never written", test="tests/test_calc.py::test_mul"),
    CharterCriterion(id="suite", text="the suite is green", check="tests"),
    CharterCriterion(id="lint", text="lint is clean", check="lint"),
)


async def test_criteria_are_judged_from_the_signed_trunk_run(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    scene = Scene(bus, project, tmp_path)
    base = scene.repo.commit(
        None,
        {
            "loopbus.toml": config(project),
            "calc.py": CALC,
            "tests/__init__.py": "",
            "tests/test_calc.py": TESTS,
            "conftest.py": "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n",
        },
    )
    scene.repo.set_trunk(base)
    sub = submission(project, charter(criteria=CRITERIA))
    try:
        async with charter_daemon(bus, project):
            await bus.publish(sub)
            await bus.publish(approval(project, sub))
            await scene.start()
            checked = await wait_for(bus, project, RunCriteriaChecked, timeout=120)
    finally:
        await scene.stop()
    [trunk_run] = [t for t in await scene.events(CandidateTested) if t.stage == "trunk"]
    assert trunk_run.outcome == "pass", trunk_run.failing
    assert checked.trunk == base and checked.cause == trunk_run.id
    assert set(checked.held) == {"adds", "suite"}
    assert set(checked.failing) == {"divides", "ghost", "lint"}
    assert "pending" in checked.detail["divides"]
    assert "did not run" in checked.detail["ghost"]
    assert "check lint did not run" in checked.detail["lint"]
