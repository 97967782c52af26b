"""Gate findings a later round of the unit no longer raises are resolved by the system,
and a criterion test's failure only by a round that ran it and saw it pass. Real
nats-server, real dulwich repositories, real pytest runs, the real units daemon."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from gate_repos import CALC_DONE, PENDING_ID, GitRepo, pytest_project
from gatekit import record
from kernelkit import running

from bus import Bus, read
from projections import findings as findings_fold
from projections import gates as gates_fold
from projections import reviews as reviews_fold
from projections import units as units_fold
from schemas import (
    Actor,
    Event,
    FindingRaised,
    FindingResolved,
    UnitPlanned,
    UnitTransitioned,
    format_target,
)
from schemas.lifecycle import FindingReopened
from workers.gates.runner import GateRunner, SuiteResult
from workers.gates.unitgate import UnitScope, gate_unit
from workers.units.daemon import Units, system_suite
from workers.units.settled import no_longer_raised

SYSTEM = Actor(role="system", principal="tests")
OWNED = ("calc.py", "tests/conftest.py", "tests/test_calc.py")
BROKEN = "def total(xs):\n    return 1\n"
"""Breaks the ordinary test (``total([]) == 0``): a red round with a finding in it."""
DESELECT_CRITERION = (
    "def pytest_collection_modifyitems(config, items):\n"
    "    dropped = [i for i in items if 'total_is_sum' in i.nodeid]\n"
    "    items[:] = [i for i in items if i not in dropped]\n"
    "    config.hook.pytest_deselected(items=dropped)\n"
)
"""An owned conftest that makes the round not run the criterion at all."""


def cleared(project: str) -> str:
    return pytest_project(project, pending=())["loopbus.toml"]


async def log(bus: Bus, project: str) -> list[Event]:
    return [r.event async for r in read(bus, subjects=[f"loop.{project}.>"]) if r.event]


async def round_on(
    bus: Bus, project: str, runner: GateRunner, base: str, head: str, *, first: bool
) -> SuiteResult:
    """Record the system's commit transition of U1 to ``head`` and gate it as the gate
    runner daemon does (the first round plans and starts U1)."""
    moved = UnitTransitioned(
        project=project, actor=SYSTEM, unit="U1", state="working", prior="working",
        by="commit", commit=head,
    )  # fmt: skip
    if first:
        await bus.publish(
            UnitPlanned(project=project, actor=SYSTEM, unit="U1", slice="S1",
                        files=list(OWNED), criteria=[PENDING_ID])
        )  # fmt: skip
        await bus.publish(
            UnitTransitioned(project=project, actor=SYSTEM, unit="U1", state="working",
                             prior=None, by="started")
        )  # fmt: skip
    await bus.publish(moved)
    scope = UnitScope(files=OWNED, criteria=(PENDING_ID,), all_criteria=(PENDING_ID,), base=base)
    return await record(
        runner, await gate_unit(runner, head, unit="U1", cause=moved.id, scope=scope, trunk=base)
    )


async def wait_log(bus: Bus, project: str, done: Callable[[list[Event]], bool]) -> list[Event]:
    """Follow the project's log until ``done(events so far)`` (bounded, never a sleep)."""
    events: list[Event] = []
    async with asyncio.timeout(30):
        async for record in read(bus, subjects=[f"loop.{project}.>"], follow=True):
            if record.event is not None:
                events.append(record.event)
            if done(events):
                return events
    raise AssertionError("unreachable")  # pragma: no cover


def raised(events: list[Event], nodeid: str) -> FindingRaised:
    (found,) = [
        e for e in events if isinstance(e, FindingRaised) and e.evidence.get("nodeid") == nodeid
    ]
    return found


def resolved(finding: FindingRaised) -> Callable[[list[Event]], bool]:
    return lambda events: any(
        isinstance(e, FindingResolved) and e.finding == finding.id for e in events
    )


def holder(events: list[Event], finding: FindingRaised) -> FindingRaised | None:
    """The raised finding that stands open for ``finding``'s key (the first raised with it:
    two tests failing on the same line are one open finding), if it is open."""
    key = findings_fold.key_text(format_target(finding.target), finding.severity,
                                 finding.criterion)  # fmt: skip
    state = findings_fold.FOLD.fold(events)
    held = state.open.get("U1", {}).get(key)
    return (
        next((e for e in events if isinstance(e, FindingRaised) and e.id == held.id), None)
        if held
        else None
    )


def still_open(events: list[Event], finding: FindingRaised) -> bool:
    return holder(events, finding) is not None


def settled_now(events: list[Event], project: str) -> list[FindingResolved]:
    """What the units daemon would resolve from the log as it stands."""
    units = units_fold.FOLD.fold(events)
    gates = gates_fold.FOLD.fold(events)
    suite = system_suite(units.units["U1"], gates)
    assert suite is not None
    return no_longer_raised(
        units.units["U1"], suite, findings_fold.FOLD.fold(events), gates,
        reviews_fold.FOLD.fold(events), project=project, actor=SYSTEM, now=datetime.now(UTC),
    )  # fmt: skip


async def test_a_red_rounds_finding_is_resolved_by_a_green_next_round(
    bus: Bus, project: str, git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner]
) -> None:
    """Round 1 breaks an ordinary test (a finding on the log); round 2 fixes it and the
    units daemon resolves the finding, naming the suite that no longer raised it."""
    repo = git("repo")
    base = repo.commit(pytest_project(project))
    runner = make_runner(repo, project=project)
    red = repo.commit({**repo.files, "calc.py": BROKEN})
    assert (await round_on(bus, project, runner, base, red, first=True)).outcome == "fail"
    broken = raised(await log(bus, project), "tests/test_calc.py::test_empty")
    assert broken.unit == "U1" and broken.producer == "gate_runner"

    green = repo.commit({**pytest_project(project), "calc.py": CALC_DONE,
                         "loopbus.toml": cleared(project)}, parent=base)  # fmt: skip
    suite = await round_on(bus, project, runner, base, green, first=False)
    assert suite.outcome == "pass"
    async with running(bus, Units(projects=[project])):
        events = await wait_log(bus, project, resolved(broken))
    (answer,) = [e for e in events if isinstance(e, FindingResolved) and e.finding == broken.id]
    assert answer.actor.role == "system" and answer.unit == "U1"
    assert "not raised again" in answer.why and green[:12] in answer.why
    assert not still_open(events, broken)


@pytest.mark.parametrize(
    ("calc", "frame"),
    [
        pytest.param("def total(xs):\n    return 0\n", "code:tests/", id="frame-in-the-criterion"),
        pytest.param(
            "def total(xs):\n    raise ValueError(xs)\n", "code:calc.py", id="frame-in-the-code"
        ),
    ],
)
async def test_a_criterion_failure_stays_open_until_a_round_runs_it_green(
    calc: str,
    frame: str,
    bus: Bus,
    project: str,
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
) -> None:
    """The criterion fails in round 1 (its finding on the criterion's line, or on the code
    under test); round 2 deselects it with an owned conftest (the tests check runs, the
    criterion does not): its failure is not resolved. Round 3 runs it and it passes: now
    it is."""
    repo = git("repo")
    base = repo.commit(pytest_project(project))
    runner = make_runner(repo, project=project)
    files = {**pytest_project(project), "loopbus.toml": cleared(project)}
    red = repo.commit({**files, "calc.py": calc}, parent=base)
    assert (await round_on(bus, project, runner, base, red, first=True)).outcome == "fail"
    failed = raised(await log(bus, project), PENDING_ID)
    assert format_target(failed.target).startswith(frame)
    criterion = holder(await log(bus, project), failed)  # the criterion's, or test_empty's
    assert criterion is not None

    unrun = repo.commit(
        {**files, "calc.py": CALC_DONE, "tests/conftest.py": DESELECT_CRITERION}, parent=base
    )
    suite = await round_on(bus, project, runner, base, unrun, first=False)
    assert suite.check("tests").result.tests.get(PENDING_ID) != "passed"
    events = await log(bus, project)
    assert criterion.id not in {r.finding for r in settled_now(events, project)}
    assert still_open(events, criterion)

    ran = repo.commit({**files, "calc.py": CALC_DONE}, parent=base)
    suite = await round_on(bus, project, runner, base, ran, first=False)
    assert suite.check("tests").result.tests[PENDING_ID] == "passed"
    async with running(bus, Units(projects=[project])):
        events = await wait_log(bus, project, resolved(criterion))
    assert not still_open(events, criterion)


async def test_a_finding_raised_again_by_the_next_red_round_stays_open(
    bus: Bus, project: str, git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner]
) -> None:
    """Round 2 is a new head that fails the same test on the same line: the finding is
    raised again, so nothing resolves it."""
    repo = git("repo")
    base = repo.commit(pytest_project(project))
    runner = make_runner(repo, project=project)
    red = repo.commit({**repo.files, "calc.py": BROKEN})
    assert (await round_on(bus, project, runner, base, red, first=True)).outcome == "fail"
    broken = raised(await log(bus, project), "tests/test_calc.py::test_empty")
    again = repo.commit({**repo.files, "calc.py": BROKEN + "# still broken\n"}, parent=red)
    assert (await round_on(bus, project, runner, base, again, first=False)).outcome == "fail"
    events = await log(bus, project)
    assert settled_now(events, project) == []
    assert still_open(events, broken)


async def test_a_vanished_test_still_missing_next_round_stays_open(
    bus: Bus, project: str, git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner]
) -> None:
    """Round 1 deletes trunk's ordinary test: the tests check itself passes, and the
    suite fails on a test-vanished finding raised beside it. Round 2 still lacks the test:
    the finding is raised again, so nothing may resolve it (a check that passed does not
    vouch for a finding it did not raise). Round 3 brings the test back: now it resolves."""
    repo = git("repo")
    base = repo.commit(pytest_project(project))
    runner = make_runner(repo, project=project)
    files = {**pytest_project(project), "calc.py": CALC_DONE, "loopbus.toml": cleared(project)}
    hollow = {**files, "tests/test_calc.py": "from calc import total\n"}
    gone = repo.commit(hollow, parent=base)
    assert (await round_on(bus, project, runner, base, gone, first=True)).outcome == "fail"
    (vanished,) = [
        e for e in await log(bus, project)
        if isinstance(e, FindingRaised) and e.cls == "test-vanished"
    ]  # fmt: skip
    again = repo.commit({**hollow, "calc.py": CALC_DONE + "\n"}, parent=base)
    suite = await round_on(bus, project, runner, base, again, first=False)
    assert suite.outcome == "fail" and suite.check("tests").outcome == "pass"
    events = await log(bus, project)
    assert vanished.id not in {r.finding for r in settled_now(events, project)}

    back = repo.commit(files, parent=base)
    assert (await round_on(bus, project, runner, base, back, first=False)).outcome == "pass"
    events = await log(bus, project)
    assert vanished.id in {r.finding for r in settled_now(events, project)}


async def test_an_operators_reopen_is_not_undone_by_the_suite_that_resolved_it(
    bus: Bus, project: str, git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner]
) -> None:
    """A red round's finding resolved by a green round, then reopened by an operator: the
    same green suite does not resolve it a second time (only a later round may)."""
    repo = git("repo")
    base = repo.commit(pytest_project(project))
    runner = make_runner(repo, project=project)
    red = repo.commit({**repo.files, "calc.py": BROKEN})
    await round_on(bus, project, runner, base, red, first=True)
    broken = raised(await log(bus, project), "tests/test_calc.py::test_empty")
    green = repo.commit({**pytest_project(project), "calc.py": CALC_DONE,
                         "loopbus.toml": cleared(project)}, parent=base)  # fmt: skip
    await round_on(bus, project, runner, base, green, first=False)
    events = await log(bus, project)
    assert broken.id in {r.finding for r in settled_now(events, project)}
    await bus.publish(settled_now(events, project)[0])
    await bus.publish(
        FindingReopened(project=project, actor=SYSTEM, finding=broken.id, original=broken,
                        why="still flaky on main", claim=broken.id, by="operator:olive")
    )  # fmt: skip
    events = await log(bus, project)
    assert still_open(events, broken)
    assert broken.id not in {r.finding for r in settled_now(events, project)}
