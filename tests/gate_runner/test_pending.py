"""Pending tests are narrow and strict: only the criterion's own assertion failing is green."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from gate_repos import (
    CALC_DONE,
    PENDING_ID,
    GitRepo,
    pytest_project,
)
from gatekit import run_commit

from schemas.targets import CodeTarget
from workers.gates.runner import GateRunner

RAISES_OTHER = "def total(xs):\n    raise NotImplementedError('later')\n"
ASSERTS_INSIDE = "def total(xs):\n    assert xs == [], 'not written yet'\n    return 0\n"
SKIPPED = "import pytest\n\n\ndef test_total_is_sum():\n    pytest.skip('not yet')\n"
XFAILED = (
    "import pytest\n\n\n@pytest.mark.xfail(reason='later')\n"
    "def test_total_is_sum():\n    assert False\n"
)
BROKEN_IMPORT = "from calc import missing_name\n\n\ndef test_total_is_sum():\n    assert False\n"
SETUP_ERROR = (
    "import pytest\n\n\n@pytest.fixture\ndef data():\n    raise RuntimeError('no data')\n\n\n"
    "def test_total_is_sum(data):\n    assert False\n"
)
CRIT = "tests/test_criteria.py"
PARAMETRIZED = (
    "import pytest\n\nfrom calc import total\n\n\n@pytest.mark.parametrize('n', [1, 2])\n"
    "def test_total_is_sum(n):\n    assert total([n, n]) == 2 * n\n"
)


@pytest.mark.parametrize(
    ("files", "outcome", "needle"),
    [
        pytest.param({}, "pass", None, id="pending-fails-on-its-assertion-is-green"),
        pytest.param(
            {"calc.py": RAISES_OTHER},
            "fail",
            "raised NotImplementedError",
            id="other-exception-is-red",
        ),
        pytest.param(
            {"calc.py": ASSERTS_INSIDE},
            "fail",
            "not its own assertion",
            id="assertion-in-code-is-red",
        ),
        pytest.param({CRIT: SKIPPED}, "fail", "was skipped", id="skipped-is-red"),
        pytest.param({CRIT: XFAILED}, "fail", "was xfailed", id="xfail-is-red"),
        pytest.param({CRIT: SETUP_ERROR}, "fail", "errored in setup", id="setup-error-is-red"),
        pytest.param(
            {CRIT: BROKEN_IMPORT}, "error", "collection error", id="collection-error-is-error"
        ),
        pytest.param({CRIT: PARAMETRIZED}, "pass", None, id="parametrized-pending-is-green"),
        pytest.param(
            {"calc.py": CALC_DONE}, "fail", "clear the marker", id="pending-passes-is-red"
        ),
    ],
)
async def test_pending_case(
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    files: dict[str, str],
    outcome: str,
    needle: str | None,
) -> None:
    """Each way a pending test can end has exactly one outcome."""
    repo = git("repo")
    commit = repo.commit({**pytest_project(project), **files})
    suite = await run_commit(make_runner(repo), commit, checks=["tests"])
    run = suite.check("tests")
    assert run.outcome == outcome, run.result.summary + run.result.error
    if needle is None:
        assert run.findings == []
    else:
        assert any(needle in f.message for f in run.findings), [f.message for f in run.findings]
    assert suite.outcome == outcome


async def test_passing_pending_test_points_at_its_marker_and_clearing_it_is_green(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """A pending test that passes is red with a finding on its loopbus.toml line, until the
    same commit removes it from pending."""
    repo = git("repo")
    runner = make_runner(repo)
    implemented = repo.commit({**pytest_project(project), "calc.py": CALC_DONE})
    red = (await run_commit(runner, implemented, checks=["tests"])).check("tests")
    assert red.outcome == "fail"
    (finding,) = red.findings
    text = repo.files["loopbus.toml"].splitlines()
    line = next(i for i, t in enumerate(text, start=1) if PENDING_ID in t)
    assert finding.target == CodeTarget(path="loopbus.toml", start=line, end=line)
    assert finding.criterion == "tests" and finding.producer == "gate_runner"
    cleared = repo.commit({**pytest_project(project, pending=()), "calc.py": CALC_DONE})
    green = (await run_commit(runner, cleared, checks=["tests"])).check("tests")
    assert green.outcome == "pass" and not green.cached


async def test_pending_id_naming_no_test_is_a_config_error(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """A pending id that matches no collected test is an error pointing at loopbus.toml."""
    repo = git("repo")
    missing = "tests/test_criteria.py::test_no_such_criterion"
    commit = repo.commit(pytest_project(project, pending=(PENDING_ID, missing)))
    run = (await run_commit(make_runner(repo), commit, checks=["tests"])).check("tests")
    assert run.outcome == "error"
    assert "names no test" in run.result.error
    (finding,) = [f for f in run.findings if missing in f.message]
    assert isinstance(finding.target, CodeTarget) and finding.target.path == "loopbus.toml"


async def test_pending_test_that_times_out_is_red(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """A pending test that never ends measured nothing: the run is an error, not green."""
    repo = git("repo")
    slow = "import time\n\n\ndef test_total_is_sum():\n    time.sleep(60)\n    assert False\n"
    files = pytest_project(project, **{CRIT: slow})
    files["loopbus.toml"] = files["loopbus.toml"].replace("timeout = 120", "timeout = 3")
    run = (await run_commit(make_runner(repo), repo.commit(files), checks=["tests"])).check("tests")
    assert run.outcome == "error"
    assert "timed out after 3s" in run.result.error


async def test_ordinary_failure_is_red_even_with_pending_green(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """Pending never mutes other tests: a non-pending failure is red as usual."""
    repo = git("repo")
    broken = "from calc import total\n\n\ndef test_empty():\n    assert total([]) == 1\n"
    commit = repo.commit(pytest_project(project, **{"tests/test_calc.py": broken}))
    run = (await run_commit(make_runner(repo), commit, checks=["tests"])).check("tests")
    assert run.outcome == "fail"
    (finding,) = run.findings
    assert finding.target == CodeTarget(path="tests/test_calc.py", start=5, end=5)
    assert "tests/test_calc.py::test_empty failed: AssertionError" in finding.message
