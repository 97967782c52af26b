"""Criteria judged from a real trunk gate run: the merger gates trunk with the real gate
runner (pytest under the gate plugin) and the charter daemon reads the signed results.

A pending test failing is green for trunk but meets no criterion; a test that does not
exist meets none; a check criterion holds when the check passed; a test that ran and
passed holds."""

from __future__ import annotations

from pathlib import Path

from charterkit import approval, charter, charter_daemon, submission, wait_for, wait_until
from merger_scene import Scene

from bus import Bus
from schemas.charter import CharterCriterion, RunCriteriaChecked
from schemas.merges import CandidateTested

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
        async with charter_daemon(bus, project, repo=scene.repo.path):
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
    # Neither test_mul nor a lint check existed when the charter was approved: nothing
    # pins what they must prove, so whatever a unit or a contract later writes under
    # those names cannot meet them.
    assert "test tests/test_calc.py::test_mul was not on trunk" in checked.detail["ghost"]
    assert "check lint was not in loopbus.toml" in checked.detail["lint"]


DESELECT = """\
def pytest_collection_modifyitems(config, items):
    kept = [i for i in items if not i.nodeid.endswith("test_add")]
    config.hook.pytest_deselected(items=[i for i in items if i not in kept])
    items[:] = kept
"""


async def test_a_conftest_that_deselects_the_test_does_not_meet_its_criterion(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    """An agent's conftest.py on trunk deselects the criterion's test: trunk is still
    green, the test is recorded as deselected, and the criterion does not hold."""
    scene = Scene(bus, project, tmp_path)
    base = scene.repo.commit(
        None,
        {
            "loopbus.toml": config(project),
            "calc.py": CALC,
            "tests/__init__.py": "",
            "tests/test_calc.py": TESTS,
            "conftest.py": "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n"
            + DESELECT,
        },
    )
    scene.repo.set_trunk(base)
    sub = submission(project, charter(criteria=CRITERIA[:1]))
    try:
        async with charter_daemon(bus, project, repo=scene.repo.path):
            await bus.publish(sub)
            await bus.publish(approval(project, sub))
            await scene.start()
            checked = await wait_for(bus, project, RunCriteriaChecked, timeout=120)
    finally:
        await scene.stop()
    assert checked.held == () and checked.failing == ("adds",)
    assert checked.detail["adds"] == "test tests/test_calc.py::test_add deselected"


MUL = "\n\ndef mul(a, b):\n    return a * b\n"
MORE = "from calc import add\n\n\ndef test_twice():\n    assert add(2, 2) == 4\n"
PLANTED = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
REBOUND = (
    "\n\ndef add(a, b):  # the module's own add: the test no longer tests calc\n    return a + b\n"
)


async def test_only_the_approved_test_file_meets_a_criterion(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    """The approval pins each test criterion's whole file. Trunk's ``test_calc.py`` meets
    the criterion whose source is that file (layout and comments aside); ``test_more.py``
    does not meet the one whose source asserts something else. Then a push (as a contract
    or any writer could) adds a ``test_mul.py`` after the approval and rebinds ``add``
    inside ``test_calc.py``: every test still passes on trunk, and neither criterion
    holds."""
    scene = Scene(bus, project, tmp_path)
    files = {
        "loopbus.toml": config(project),
        "calc.py": CALC,
        "tests/__init__.py": "",
        "tests/test_calc.py": TESTS,
        "tests/test_more.py": MORE,
        "conftest.py": "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n",
    }
    base = scene.repo.commit(None, files)
    scene.repo.set_trunk(base)
    laid_out = "# the calculator's criteria\n" + TESTS.replace("\n\n\n", "\n\n")
    criteria = (
        CharterCriterion(
            id="adds", text="it adds", test="tests/test_calc.py::test_add", source=laid_out
        ),
        CharterCriterion(
            id="twice",
            text="2 + 3 is 5",
            test="tests/test_more.py::test_twice",
            source=MORE.replace("add(2, 2) == 4", "add(2, 3) == 5"),
        ),
        CharterCriterion(id="muls", text="it multiplies", test="tests/test_mul.py::test_mul"),
    )
    sub = submission(project, charter(criteria=criteria))
    try:
        async with charter_daemon(bus, project, repo=scene.repo.path):
            await bus.publish(sub)
            await bus.publish(approval(project, sub))
            await scene.start()
            first = await wait_for(bus, project, RunCriteriaChecked, timeout=120)
            assert first.held == ("adds",), first.detail
            assert "not the one approved" in first.detail["twice"]
            assert "was not on trunk" in first.detail["muls"]
            planted = scene.repo.commit(
                base,
                {
                    **files,
                    "calc.py": CALC + MUL,
                    "tests/test_calc.py": TESTS + REBOUND,
                    "tests/test_mul.py": PLANTED,
                },
            )
            scene.repo.set_trunk(planted)
            second = await wait_until(
                bus,
                project,
                lambda events: any(
                    isinstance(e, RunCriteriaChecked) and e.trunk == planted for e in events
                ),
                timeout=120,
            )
    finally:
        await scene.stop()
    [judged] = [e for e in second if isinstance(e, RunCriteriaChecked) and e.trunk == planted]
    [trunk_run] = [
        t
        for t in await scene.events(CandidateTested)
        if t.candidate == planted and t.stage == "trunk"
    ]
    assert trunk_run.outcome == "pass", "test_mul ran and passed on trunk"
    assert judged.held == ()
    assert "not the one approved" in judged.detail["adds"]
    assert "nothing pins what it must prove" in judged.detail["muls"]
    assert "muls" not in judged.bodies, "unpinned: its file is not compared"
