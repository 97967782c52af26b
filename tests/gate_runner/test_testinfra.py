"""A candidate's change to what runs the tests cannot change what the tests say: when it
changes a conftest.py, a pytest plugin or pytest's settings, its tests also run with
trunk's versions of those files, and a test that ends differently blocks it. Real
nats-server, real dulwich repositories, real pytest runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from gate_repos import (
    CALC_DONE,
    CALC_STUB,
    PENDING_ID,
    TEST_CALC,
    GitRepo,
    config,
    pytest_project,
)
from gatekit import record, run_commit

from bus import Bus, read
from projections import gates as gates_fold
from projections import units as units_fold
from schemas import Actor, Event, FindingRaised, UnitPlanned, UnitTransitioned
from workers.gates.runner import GateRunner, SuiteResult
from workers.gates.testinfra import OutcomeChange, describe, infra_files, why_infra
from workers.gates.unitgate import UnitScope, gate_unit
from workers.merger.gates import verdict_of
from workers.units.daemon import ready_move

SYSTEM = Actor(role="system", principal="tests")
DOC = Path(__file__).resolve().parents[2] / "docs" / "gates.md"
CRITERION = PENDING_ID
BROKEN_TEST = "tests/test_calc.py::test_empty"
# The criterion passes, and the test trunk passed (total([]) == 0) now fails.
CALC_BREAKS_EMPTY = "def total(xs):\n    return sum(xs) if xs else None\n"
# Registered trylast, this wrapper runs inside the reporting plugin's: it rewrites each
# report before the plugin reads it, so the plugin itself records a pass.
FLIP_FAILURES = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True, trylast=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n"
    "    report = outcome.get_result()\n"
    "    if report.failed:\n"
    "        report.outcome = 'passed'\n"
    "        report.longrepr = None\n"
)
# Reaches into the reporting plugin's own state before it writes the report.
PATCHES_THE_REPORTER = (
    "import sys\n\nimport pytest\n\n\n@pytest.hookimpl(tryfirst=True)\n"
    "def pytest_sessionfinish(session, exitstatus):\n"
    "    reporter = sys.modules['loopbus_gate_pytest']\n"
    "    for test in reporter._state['tests'].values():\n"
    "        for phase in test['phases'].values():\n"
    "            phase.clear()\n"
    "            phase['outcome'] = 'passed'\n"
    "    session.exitstatus = 0\n"
)
# Rewrites the report file after the plugin wrote it.
REWRITES_THE_REPORT = (
    "import json\nimport os\n\n\ndef pytest_unconfigure(config):\n"
    "    path = os.environ['LOOPBUS_GATE_REPORT']\n"
    "    with open(path) as f:\n"
    "        report = json.load(f)\n"
    "    for test in report['tests']:\n"
    "        test['phases'] = {w: {'outcome': 'passed'} for w in test['phases']}\n"
    "    report['exitstatus'] = 0\n"
    "    with open(path, 'w') as f:\n"
    "        json.dump(report, f)\n"
)
ADDS_A_FIXTURE = "import pytest\n\n\n@pytest.fixture\ndef numbers():\n    return [1, 2]\n"
USES_THE_FIXTURE = (
    "from calc import total\n\n\ndef test_numbers(numbers):\n    assert total(numbers) == 3\n"
)


def cleared(project: str) -> str:
    """loopbus.toml with the criterion's pending marker removed (the allowed edit)."""
    return pytest_project(project, pending=())["loopbus.toml"]


async def log(bus: Bus, project: str) -> list[Event]:
    return [r.event async for r in read(bus, subjects=[f"loop.{project}.>"]) if r.event]


def rewritten(events: list[Event]) -> list[FindingRaised]:
    return [e for e in events if isinstance(e, FindingRaised) and e.cls == "test-rewritten"]


async def gate_as_unit(
    bus: Bus, project: str, runner: GateRunner, base: str, head: str, *, first: bool = True
) -> tuple[SuiteResult, list[Event]]:
    """Plan U1 with the whole ``tests/`` folder, record the system's commit transition for
    ``head`` and gate it as the gate-runner daemon does."""
    files = ("calc.py", "tests/")
    moved = UnitTransitioned(
        project=project,
        actor=SYSTEM,
        unit="U1",
        state="working",
        prior="working",
        by="commit",
        commit=head,
    )
    if first:
        await bus.publish(
            UnitPlanned(
                project=project,
                actor=SYSTEM,
                unit="U1",
                slice="S1",
                files=list(files),
                criteria=[CRITERION],
            )
        )
        await bus.publish(
            UnitTransitioned(
                project=project, actor=SYSTEM, unit="U1", state="working", prior=None, by="started"
            )
        )
    await bus.publish(moved)
    scope = UnitScope(files=files, criteria=(CRITERION,), all_criteria=(CRITERION,), base=base)
    suite = await record(
        runner, await gate_unit(runner, head, unit="U1", cause=moved.id, scope=scope, trunk=base)
    )
    return suite, await log(bus, project)


@pytest.mark.parametrize(
    "conftest",
    [
        pytest.param(FLIP_FAILURES, id="report-hook-wrapper"),
        pytest.param(PATCHES_THE_REPORTER, id="patches-the-reporting-plugin"),
        pytest.param(REWRITES_THE_REPORT, id="rewrites-the-report-file"),
    ],
)
async def test_a_conftest_in_the_units_own_folder_that_turns_failures_into_passes_blocks_it(
    conftest: str,
    bus: Bus,
    project: str,
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
) -> None:
    """The unit owns tests/, adds tests/conftest.py that turns failures into passes (a
    report hook, the reporting plugin's state patched, its report file rewritten), and its
    code breaks a test trunk passed: its own run reads green, the run with trunk's files
    does not, and the suite fails on a test-rewritten finding naming the file and the test;
    the unit is not ready."""
    repo = git("repo")
    base = repo.commit(pytest_project(project))
    runner = make_runner(repo, project=project)
    head = repo.commit(
        {
            **repo.files,
            "calc.py": CALC_BREAKS_EMPTY,
            "tests/conftest.py": conftest,
            "loopbus.toml": cleared(project),
        }
    )
    suite, events = await gate_as_unit(bus, project, runner, base, head)
    assert suite.check("tests").outcome == "pass"  # the rewrite fooled the run itself
    assert suite.outcome == "fail"
    (finding,) = rewritten(events)
    assert [f["path"] for f in finding.evidence["files"]] == ["tests/conftest.py"]
    assert finding.evidence["changes"] == [
        {"nodeid": BROKEN_TEST, "candidate": "passed", "trunk_files": "failed"}
    ]
    assert finding.message in DOC.read_text()  # the example docs/gates.md shows
    assert finding.severity == "high" and finding.unit == "U1"
    assert finding.actor.role == "system"
    units, gates = units_fold.FOLD.fold(events), gates_fold.FOLD.fold(events)
    assert ready_move(units, "U1", gates) is None


PLUGIN_FILES = {
    "pyproject-addopts": {"pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-p myplugin"\n'},
    "pytest-ini": {"pytest.ini": "[pytest]\naddopts = -p myplugin\n"},
}


@pytest.mark.parametrize("via", sorted(PLUGIN_FILES))
async def test_a_plugin_loaded_through_pytest_settings_that_flips_failures_is_found(
    via: str,
    bus: Bus,
    project: str,
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
) -> None:
    """A candidate judged against trunk (as the merger judges one) that loads its own
    plugin with ``-p`` from pyproject.toml or pytest.ini fails with a finding naming the
    settings file, the plugin and the flipped test."""
    repo = git("repo")
    base = repo.commit(pytest_project(project))
    runner = make_runner(repo, project=project)
    settings = PLUGIN_FILES[via]
    head = repo.commit(
        {
            **repo.files,
            **settings,
            "myplugin.py": FLIP_FAILURES,
            "calc.py": CALC_BREAKS_EMPTY,
            "loopbus.toml": cleared(project),
        }
    )
    suite = await run_commit(runner, head, trunk=base, criteria=[CRITERION], reason="trunk")
    assert suite.check("tests").outcome == "pass"
    assert suite.outcome == "fail"
    (finding,) = rewritten(await log(bus, project))
    assert sorted(f["path"] for f in finding.evidence["files"]) == sorted(
        [*settings, "myplugin.py"]
    )
    assert [c["nodeid"] for c in finding.evidence["changes"]] == [BROKEN_TEST]
    assert [(c.check, [x.nodeid for x in c.changes]) for c in suite.comparisons] == [
        ("tests", [BROKEN_TEST])
    ]
    (failing,) = verdict_of(suite, head).failing  # what the merger records as red
    assert (failing.test, failing.check) == ("test-rewritten", "tests")
    assert failing.message == finding.message


EXIT_CODE_PYTEST = """
[[check]]
id = "suite"
command = "python -m pytest -q"
parser = "exit-code"
timeout = 120
"""


async def test_an_exit_code_check_that_passes_only_with_the_candidates_conftest_fails(
    bus: Bus, project: str, git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner]
) -> None:
    """A check that runs pytest but reads only its exit code names no tests: it is compared
    as a whole, and green with the candidate's conftest but red with trunk's fails."""
    repo = git("repo")
    files = {
        "loopbus.toml": config(project, EXIT_CODE_PYTEST),
        "calc.py": CALC_STUB,
        "tests/test_calc.py": TEST_CALC,
    }
    base = repo.commit(files)
    runner = make_runner(repo, project=project)
    head = repo.commit({**files, "calc.py": CALC_BREAKS_EMPTY, "tests/conftest.py": FLIP_FAILURES})
    suite = await run_commit(runner, head, trunk=base, reason="trunk")
    assert suite.check("suite").outcome == "pass"
    assert suite.outcome == "fail"
    (finding,) = rewritten(await log(bus, project))
    assert finding.evidence["changes"] == [
        {"nodeid": "check:suite", "candidate": "pass", "trunk_files": "fail"}
    ]


async def test_an_innocent_conftest_change_is_compared_and_does_not_block(
    bus: Bus, project: str, git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner]
) -> None:
    """A conftest that only adds a fixture (used by a new test that is no criterion) runs
    the check a second time with trunk's files, finds every compared test ending the same,
    and the unit is ready; a round that changes no test file runs the check once."""
    repo = git("repo")
    base = repo.commit(pytest_project(project))
    runner = make_runner(repo, project=project)
    plain = repo.commit({**repo.files, "calc.py": CALC_DONE, "loopbus.toml": cleared(project)})
    suite, _events = await gate_as_unit(bus, project, runner, base, plain)
    assert suite.outcome == "pass" and suite.infra == [] and suite.comparisons == []
    runs_before = runner.executions
    head = repo.commit(
        {
            **repo.files,
            "tests/conftest.py": ADDS_A_FIXTURE,
            "tests/test_more.py": USES_THE_FIXTURE,
        }
    )
    suite, events = await gate_as_unit(bus, project, runner, base, head, first=False)
    assert suite.outcome == "pass"
    assert runner.executions == runs_before + 2  # its own run, and the one with trunk's files
    assert [f.path for f in suite.infra] == ["tests/conftest.py"]
    (compared,) = suite.comparisons
    assert compared.compared == [BROKEN_TEST, CRITERION] and compared.changes == []
    assert rewritten(events) == []
    units, gates = units_fold.FOLD.fold(events), gates_fold.FOLD.fold(events)
    move = ready_move(units, "U1", gates)
    assert move is not None and move.ready


async def test_a_test_that_needs_the_units_conftest_to_be_collected_is_not_passed_silently(
    bus: Bus, project: str, git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner]
) -> None:
    """The unit rewrites a test trunk passed to import a name its new conftest defines:
    with trunk's files the test cannot be collected, and the finding says its outcome could
    not be checked (and why the second run erred) rather than letting it pass."""
    repo = git("repo")
    base = repo.commit(pytest_project(project))
    runner = make_runner(repo, project=project)
    head = repo.commit(
        {
            **repo.files,
            "calc.py": CALC_DONE,
            "tests/conftest.py": "EMPTY = []\n",
            "tests/test_calc.py": (
                "from calc import total\nfrom conftest import EMPTY\n\n\n"
                "def test_empty():\n    assert total(EMPTY) == 0\n"
            ),
            "loopbus.toml": cleared(project),
        }
    )
    suite, events = await gate_as_unit(bus, project, runner, base, head)
    assert suite.check("tests").outcome == "pass" and suite.outcome == "fail"
    (finding,) = rewritten(events)
    assert finding.evidence["changes"] == [  # the import error stops pytest before any test
        {"nodeid": BROKEN_TEST, "candidate": "passed", "trunk_files": None},
        {"nodeid": CRITERION, "candidate": "passed", "trunk_files": "norun"},
    ]
    assert "could not be collected or run" in finding.message
    assert "collection error in tests/test_calc.py" in finding.evidence["swap_error"]


@pytest.mark.parametrize(
    ("path", "base", "head", "counts"),
    [
        pytest.param("a/b/conftest.py", None, b"", True, id="conftest-any-depth"),
        pytest.param("sub/pytest.ini", b"", None, True, id="pytest-ini-deleted"),
        pytest.param(
            "pyproject.toml",
            b"[project]\nname='x'\n",
            b"[project]\nname='x'\n[project.entry-points.pytest11]\nx='x'\n",
            True,
            id="pytest11-entry-point",
        ),
        pytest.param(
            "pyproject.toml",
            b"[project]\nname='x'\n",
            b"[project]\nname='y'\n",
            False,
            id="pyproject-other-change",
        ),
        pytest.param("setup.cfg", b"", b"[tool:pytest]\naddopts = -p x\n", True, id="setup-cfg"),
        pytest.param("tox.ini", b"[tox]\n", b"[tox]\n[pytest]\n", True, id="tox-ini"),
        pytest.param(
            "tests/helpers.py", b"", b"pytest_plugins = ['x']\n", True, id="pytest-plugins"
        ),
        pytest.param(
            "lib/x.py", b"", b"def pytest_runtest_makereport(item):\n", True, id="hook-module"
        ),
        pytest.param("loopbus_gate_pytest.py", None, b"", True, id="shadows-reporter"),
        pytest.param("_pytest/runner.py", None, b"", True, id="shadows-pytest"),
        pytest.param("tests/__pycache__/conftest.cpython-311.pyc", None, b"", True, id="bytecode"),
        pytest.param("calc.py", b"x = 1\n", b"x = 2\n", False, id="ordinary-code"),
    ],
)
def test_what_counts_as_test_infrastructure(
    path: str, base: bytes | None, head: bytes | None, counts: bool
) -> None:
    """Conftests, ini files, pytest settings and entry points, plugin modules and shadows
    of pytest count (at any depth); ordinary code and unrelated settings do not."""
    assert (why_infra(path, base, head) is not None) is counts
    sides = {"base": base, "head": head}
    assert bool(infra_files([path], lambda side, _p: sides[side])) is counts


def test_a_test_the_swap_cannot_collect_is_said_so() -> None:
    """When trunk's files leave a compared test uncollected, the finding says its outcome
    could not be checked rather than passing it silently."""
    files = infra_files(["tests/conftest.py"], lambda side, _p: b"" if side == "head" else None)
    message = describe(files, [OutcomeChange(CRITERION, "passed", None)])
    assert f"{CRITERION}: passed with the candidate's files, not collected with trunk's" in (
        message
    )
    assert "could not be collected or run" in message and "tests/conftest.py" in message
