"""Done is bound to the contract: a unit commit is scoped to its plan, judged with trunk's
configuration, keeps every test trunk ran, and is ready only when its own criteria ran and
passed. Real nats-server, real dulwich repositories, real pytest runs."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from gate_repos import CALC_DONE, PENDING_ID, GitRepo, config, pytest_project
from gatekit import record, run_commit

from bus import Bus, read
from projections import gates as gates_fold
from projections import units as units_fold
from schemas import Actor, Event, FindingRaised, UnitPlanned, UnitTransitioned
from schemas.gates import GateSuiteCompleted
from workers.gates.runner import GateRunner, SuiteResult
from workers.gates.scope import breaches
from workers.gates.trunkconfig import config_changes, refused
from workers.gates.unitgate import UnitScope, gate_unit
from workers.units.daemon import contract_for, ready_move

SYSTEM = Actor(role="system", principal="tests")
OWNED = ("calc.py", "tests/conftest.py", "tests/test_calc.py")
CRITERION = PENDING_ID

SKIP_CRITERION = (
    "import pytest\n\n\ndef pytest_collection_modifyitems(items):\n"
    "    for item in items:\n"
    "        if 'total_is_sum' in item.nodeid:\n"
    "            item.add_marker(pytest.mark.skip(reason='later'))\n"
)
FAILURES_PASS = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n"
    "    report = outcome.get_result()\n"
    "    report.outcome = 'passed'\n"
)


def cleared(project: str) -> str:
    """loopbus.toml with the criterion's pending marker removed (the allowed edit)."""
    return pytest_project(project, pending=())["loopbus.toml"]


async def log(bus: Bus, project: str) -> list[Event]:
    return [r.event async for r in read(bus, subjects=[f"loop.{project}.>"]) if r.event]


async def commit_and_gate(
    bus: Bus,
    project: str,
    runner: GateRunner,
    repo: GitRepo,
    base: str,
    head: str,
    files: tuple[str, ...] = OWNED,
    again: bool = False,
) -> tuple[SuiteResult, units_fold.UnitsState, gates_fold.GatesState]:
    """Plan U1, record the system's commit transition for ``head``, gate it as the gate
    runner daemon does, and fold the log as the units daemon would."""
    planned = UnitPlanned(
        project=project,
        actor=SYSTEM,
        unit="U1",
        slice="S1",
        files=list(files),
        criteria=[CRITERION],
    )
    started = UnitTransitioned(
        project=project, actor=SYSTEM, unit="U1", state="working", prior=None, by="started"
    )
    moved = UnitTransitioned(
        project=project,
        actor=SYSTEM,
        unit="U1",
        state="working",
        prior="working",
        by="commit",
        commit=head,
    )
    for event in (moved,) if again else (planned, started, moved):
        await bus.publish(event)
    scope = UnitScope(files=files, criteria=(CRITERION,), all_criteria=(CRITERION,), base=base)
    suite = await record(
        runner, await gate_unit(runner, head, unit="U1", cause=moved.id, scope=scope, trunk=base)
    )
    events = await log(bus, project)
    return suite, units_fold.FOLD.fold(events), gates_fold.FOLD.fold(events)


def findings(events: list[Event], cls: str) -> list[FindingRaised]:
    return [e for e in events if isinstance(e, FindingRaised) and e.cls == cls]


async def test_a_unit_that_leaves_its_criterion_pending_is_not_ready(
    bus: Bus, project: str, git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner]
) -> None:
    """A green suite with the unit's criterion still pending (nothing useful committed) is
    not ready; implementing it and clearing the marker is, with criterion -> result id."""
    repo = git("repo")
    base = repo.commit(pytest_project(project))
    runner = make_runner(repo, project=project)
    idle = repo.commit({**repo.files, "calc.py": "def total(xs):\n    return 0  # later\n"})
    suite, units, gates = await commit_and_gate(bus, project, runner, repo, base, idle)
    assert suite.outcome == "pass"  # the pending test failing its assertion is green
    found = contract_for(units, "U1", gates)
    assert found is not None and not found.holds
    assert found.unmet == {CRITERION: "pending-failed"}
    assert ready_move(units, "U1", gates) is None

    done = repo.commit({**pytest_project(project), "calc.py": CALC_DONE,
                        "loopbus.toml": cleared(project)}, parent=base)  # fmt: skip
    suite, units, gates = await commit_and_gate(bus, project, runner, repo, base, done, again=True)
    assert suite.outcome == "pass"
    move = ready_move(units, "U1", gates)
    assert move is not None and move.ready
    tests_run = suite.check("tests").result
    assert dict(move.evidence) == {CRITERION: tests_run.id}
    assert tests_run.tests[CRITERION] == "passed"


async def test_a_criterion_skipped_by_a_conftest_is_not_ready(
    bus: Bus, project: str, git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner]
) -> None:
    """An owned conftest that skips the criterion (marker cleared) does not make the unit
    ready, and the test trunk ran, now skipped, fails the suite."""
    repo = git("repo")
    base = repo.commit(pytest_project(project))
    runner = make_runner(repo, project=project)
    head = repo.commit(
        {**repo.files, "tests/conftest.py": SKIP_CRITERION, "loopbus.toml": cleared(project)}
    )
    suite, units, gates = await commit_and_gate(bus, project, runner, repo, base, head)
    found = contract_for(units, "U1", gates)
    assert found is not None and found.unmet == {CRITERION: "skipped"}
    assert ready_move(units, "U1", gates) is None
    assert suite.outcome == "fail"
    vanished = findings(await log(bus, project), "test-vanished")
    assert [f.evidence["nodeid"] for f in vanished] == [CRITERION]


async def test_a_conftest_rewriting_failures_is_refused_as_a_scope_breach(
    bus: Bus, project: str, git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner]
) -> None:
    """A root conftest.py turning failures into passes is a frozen test-configuration edit:
    a scope-breach finding, and the commit is not gated (an error suite that ran nothing)."""
    repo = git("repo")
    base = repo.commit(pytest_project(project))
    runner = make_runner(repo, project=project)
    head = repo.commit(
        {**repo.files, "conftest.py": FAILURES_PASS, "loopbus.toml": cleared(project)}
    )
    suite, units, gates = await commit_and_gate(bus, project, runner, repo, base, head)
    assert suite.outcome == "error" and suite.checks == []
    assert suite.error.startswith("scope-breach")
    (breach,) = findings(await log(bus, project), "scope-breach")
    assert breach.evidence["breaches"] == [
        {"path": "conftest.py", "kind": "frozen", "detail": "test configuration"}
    ]
    assert breach.unit == "U1" and breach.actor.role == "system"
    assert ready_move(units, "U1", gates) is None


async def test_a_change_outside_the_units_files_is_a_scope_breach(
    bus: Bus, project: str, git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner]
) -> None:
    """Editing a file the plan did not give the unit (or the criterion test) is refused."""
    repo = git("repo")
    base = repo.commit(pytest_project(project, README="hello\n"))
    runner = make_runner(repo, project=project)
    head = repo.commit(
        {
            **repo.files,
            "README": "bye\n",
            "tests/test_criteria.py": "def test_total_is_sum():\n    pass\n",
        }
    )
    suite, _units, _gates = await commit_and_gate(bus, project, runner, repo, base, head)
    assert suite.outcome == "error"
    (breach,) = findings(await log(bus, project), "scope-breach")
    assert {(b["path"], b["kind"]) for b in breach.evidence["breaches"]} == {
        ("README", "out-of-scope"),
        ("tests/test_criteria.py", "frozen"),
    }


async def test_a_test_that_ran_on_trunk_and_disappears_fails(
    bus: Bus, project: str, git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner]
) -> None:
    """Deleting an owned test file that trunk ran fails the suite with a test-vanished
    finding naming the test, even though every remaining test passes."""
    repo = git("repo")
    base = repo.commit(pytest_project(project))
    runner = make_runner(repo, project=project)
    files = {k: v for k, v in pytest_project(project).items() if k != "tests/test_calc.py"}
    head = repo.commit({**files, "calc.py": CALC_DONE, "loopbus.toml": cleared(project)})
    suite, units, gates = await commit_and_gate(bus, project, runner, repo, base, head)
    assert suite.outcome == "fail"
    (gone,) = findings(await log(bus, project), "test-vanished")
    assert gone.evidence["nodeid"] == "tests/test_calc.py::test_empty"
    assert "is no longer collected" in gone.message
    assert ready_move(units, "U1", gates) is None


async def test_the_candidates_own_config_does_not_judge_it(
    bus: Bus, project: str, git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner]
) -> None:
    """A candidate whose loopbus.toml makes its red check 'true' is still run with trunk's
    command (judged with trunk's config) when gated as a unit against trunk."""
    repo = git("repo")
    red = '\n[[check]]\nid = "t"\ncommand = "python -c \'raise SystemExit(1)\'"\n'
    base = repo.commit({"loopbus.toml": config(project, red), "a.py": "x = 1\n"})
    runner = make_runner(repo, project=project)
    loose = config(project, '\n[[check]]\nid = "t"\ncommand = "true"\n')
    head = repo.commit({"loopbus.toml": loose, "a.py": "x = 2\n"})
    judged = await run_commit(runner, head, trunk=base)
    assert judged.outcome == "fail"
    own = await run_commit(runner, head)
    assert own.outcome == "pass"  # the same commit under its own config: what it hoped for
    assert isinstance(judged.suite, GateSuiteCompleted)


async def test_a_pass_cached_under_the_candidates_own_config_does_not_answer_for_trunks(
    bus: Bus, project: str, git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner]
) -> None:
    """The candidate is first run under its own config (its 'true' passes and is cached);
    judged with trunk's config afterwards, the cache does not answer with that pass: the
    key carries the command that ran, so trunk's command runs and fails."""
    repo = git("repo")
    red = '\n[[check]]\nid = "t"\ncommand = "python -c \'raise SystemExit(1)\'"\n'
    base = repo.commit({"loopbus.toml": config(project, red), "a.py": "x = 1\n"})
    runner = make_runner(repo, project=project)
    loose = config(project, '\n[[check]]\nid = "t"\ncommand = "true"\n')
    head = repo.commit({"loopbus.toml": loose, "a.py": "x = 2\n"})
    own = await run_commit(runner, head)
    assert own.outcome == "pass"
    judged = await run_commit(runner, head, trunk=base)
    assert judged.outcome == "fail"
    assert not judged.check("t").cached


def test_loosening_a_capability_parameter_is_refused_naming_it() -> None:
    """Raising ui:web's bundle budget is a loosening refused by name; lowering it tightens."""
    before = (
        '[project]\nid = "p"\ncapabilities = ["ui:web"]\n[capability."ui:web"]\ncommand = "x"\n'
    )
    looser = before + 'budget_kb = "5000"\n'
    tighter = before + 'budget_kb = "100"\n'
    (change,) = refused(config_changes(before, looser, ()))
    assert change.field == 'capability."ui:web".budget_kb'
    assert "loosened from '500' to '5000'" in change.detail
    assert refused(config_changes(before, tighter, ())) == []
    found = breaches(
        ["loopbus.toml"],
        files=["*"],
        own_criteria=(),
        all_criteria=(),
        frozen_globs=(),
        read=lambda side, _path: (before if side == "base" else looser).encode(),
    )
    assert [b.detail.split(": ")[0] for b in found] == ['capability."ui:web".budget_kb']


def test_the_allowed_config_edits_and_the_refused_ones() -> None:
    """Clearing its own pending marker and adding a check are allowed; clearing another's
    marker, editing or removing a check, and editing pytest settings in pyproject are not."""
    trunk = pytest_project("p", pending=("t/a.py::x", "t/b.py::y"))["loopbus.toml"]
    own = pytest_project("p", pending=("t/b.py::y",))["loopbus.toml"]
    other = pytest_project("p", pending=("t/a.py::x",))["loopbus.toml"]
    added = own + '\n[[check]]\nid = "more"\ncommand = "true"\n'
    edited = trunk.replace("python -m pytest -q", "python -m pytest -q -k nothing")
    assert refused(config_changes(trunk, own, ["t/a.py::x"])) == []
    assert refused(config_changes(trunk, added, ["t/a.py::x"])) == []
    assert [c.detail for c in refused(config_changes(trunk, other, ["t/a.py::x"]))] == [
        "t/b.py::y cleared, but it is not one of this unit's criteria"
    ]
    assert "edited (command)" in refused(config_changes(trunk, edited, ()))[0].detail
    # A check with an image runs outside the agent sandbox: only an operator adds one.
    imaged = added.replace('command = "true"\n', 'command = "true"\nimage = "any:latest"\n')
    assert [c.detail for c in refused(config_changes(trunk, imaged, ["t/a.py::x"]))] == [
        "added with an image; a unit may add host checks, an operator adds images"
    ]
    pyproject = {"base": b"[tool.pytest.ini_options]\naddopts = ''\n",
                 "head": b"[tool.pytest.ini_options]\naddopts = '-k nothing'\n"}  # fmt: skip
    found = breaches(
        ["pyproject.toml"],
        files=["pyproject.toml"],
        own_criteria=(),
        all_criteria=(),
        frozen_globs=(),
        read=lambda side, _path: pyproject[side],
    )
    assert [(b.path, b.kind) for b in found] == [("pyproject.toml", "frozen")]


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        ('python = "./evil/python"\n', "project.python"),
        ('salt = "other"\n', "project.salt"),
        ('anything_new = "x"\n', "project.anything_new"),
    ],
)
def test_no_project_key_but_an_added_capability_is_a_units_to_edit(edit: str, field: str) -> None:
    """[project] says how every check runs (its interpreter, for one): a unit that edits any
    of it would choose how it is judged from the next merge on, so each edit is refused."""
    trunk = pytest_project("p", pending=())["loopbus.toml"]
    candidate = trunk.replace("[project]\n", "[project]\n" + edit, 1)
    assert candidate != trunk
    assert [c.field for c in refused(config_changes(trunk, candidate, ()))] == [field]
