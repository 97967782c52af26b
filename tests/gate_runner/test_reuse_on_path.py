"""A unit's path to trunk runs no check whose answer is already on the log: the candidate on
an unmoved trunk and trunk after the fast-forward reuse the unit's own run, and nothing
else does (a changed tree or a changed check definition runs again). The stages are gated
as the daemons gate them (the unit's commit by one runner, the candidate and trunk by
another with a key of its own, as the merger does), on a real server and real git."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from gate_repos import GitRepo, config
from gatekit import record, run_commit

from bus import Bus
from schemas import new_id
from workers.gates.runner import GateRunner
from workers.gates.shared import SharedGateRunner
from workers.gates.signing import load_or_create
from workers.gates.unitgate import UnitScope, gate_unit
from workers.kernel.lease_flights import Flights
from workers.leases.decide import holder_name
from workers.merger import gitops
from workers.merger.gates import RunnerTrunkGates


def check(command: str) -> str:
    return (
        f'\n[[check]]\nid = "ok"\ncommand = "python -c \'{command}\'"\n'
        'parser = "exit-code"\ntimeout = 60\n'
    )


PASS = check("import sys; sys.exit(0)")
PASS_AGAIN = check("import sys; sys.exit(0 * 2)")  # the same answer, another definition
SLOW_PASS = check("import time; time.sleep(1)")


class Path_:
    """A trunk commit, a unit's head on it, and the merge candidate of that head."""

    def __init__(self, repo: GitRepo, project: str, checks: str = PASS) -> None:
        self.repo = repo
        self.files = {"loopbus.toml": config(project, checks), "README": "demo\n"}
        self.trunk = repo.commit(self.files, message="trunk")
        self.head = repo.commit({**self.files, "feature.py": "x = 1\n"}, parent=self.trunk)
        self.scope = UnitScope(files=("feature.py",), criteria=(), all_criteria=(), base=None)

    def merge(self, onto: str) -> str:
        attempt = gitops.merge(self.repo.path, onto, self.head, "merge the unit")
        assert attempt.commit is not None
        return attempt.commit

    @property
    def judge(self) -> str:
        return self.files["loopbus.toml"]


def merger_runner(bus: Bus, repo: GitRepo, tmp_path: Path, project: str) -> GateRunner:
    """A second runner with its own key, as the merger's trunk runs are."""
    signer = load_or_create(tmp_path / "merger-data", "merger")
    return GateRunner(bus, repo.path, signer, principal="merger", project=project)


async def gate_the_unit(runner: GateRunner, path: Path_) -> None:
    suite = await gate_unit(
        runner, path.head, unit="u1", cause=new_id(), scope=path.scope, trunk=None
    )
    await record(runner, suite)
    assert suite.outcome == "pass"


async def test_candidate_and_trunk_reuse_the_units_run_when_trunk_did_not_move(
    bus: Bus,
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    tmp_path: Path,
) -> None:
    """One check run for the whole path: the candidate on an unmoved trunk has the unit's
    tree, and trunk after the fast-forward has the candidate's, under one configuration."""
    path = Path_(git("repo"), project)
    units = make_runner(path.repo, project=project)
    await gate_the_unit(units, path)
    assert units.executions == 1
    merger = merger_runner(bus, path.repo, tmp_path, project)
    gates = RunnerTrunkGates(merger)
    candidate = path.merge(path.trunk)
    assert path.repo.tree_of(candidate) == path.repo.tree_of(path.head)
    tested = await gates.run(
        path.repo.path, candidate, trunk=path.trunk, criteria=(), judge=path.judge
    )
    assert tested.green and tested.executed == 0
    after = await gates.run(path.repo.path, candidate, judge=path.judge)  # trunk, advanced
    assert after.green and after.executed == 0
    assert merger.executions == 0 and units.executions == 1


async def test_a_moved_trunk_or_a_changed_check_runs_again(
    bus: Bus,
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    tmp_path: Path,
) -> None:
    """Nothing is reused across a different tree (trunk moved under the unit) or a
    different check definition (same tree, same answer expected, yet not known)."""
    path = Path_(git("repo"), project)
    await gate_the_unit(make_runner(path.repo, project=project), path)
    merger = merger_runner(bus, path.repo, tmp_path, project)
    gates = RunnerTrunkGates(merger)
    moved = path.repo.commit({**path.files, "other.py": "y = 2\n"}, parent=path.trunk)
    candidate = path.merge(moved)
    tested = await gates.run(path.repo.path, candidate, trunk=moved, criteria=(), judge=path.judge)
    assert tested.green and tested.executed == 1
    same_tree = path.merge(path.trunk)
    other_check = config(project, PASS_AGAIN)
    redefined = await gates.run(path.repo.path, same_tree, judge=other_check)
    assert redefined.green and redefined.executed == 1
    assert merger.executions == 2


async def test_the_merger_and_the_gate_runner_asking_at_once_run_a_check_once(
    bus: Bus, git: Callable[[str], GitRepo], project: str, tmp_path: Path
) -> None:
    """Trunk's commit asked for by the gate runner's sensor and the merger's trunk check at
    the same moment (two processes, two keys) is run by one of them; the other reuses it."""
    repo = git("repo")
    commit = repo.commit({"loopbus.toml": config(project, SLOW_PASS)})

    def shared(name: str) -> SharedGateRunner:
        signer = load_or_create(tmp_path / name, name)
        runner = GateRunner(bus, repo.path, signer, principal=name, project=project)
        flights = Flights(bus, runner.actor, holder_name(runner.actor), ttl_s=30.0)
        return SharedGateRunner(
            bus, repo.path, signer, flights=flights, principal=name, project=project
        )

    gate_runner, merger = shared("gate-runner"), shared("merger")
    first, second = await asyncio.gather(
        run_commit(gate_runner, commit), run_commit(merger, commit)
    )
    assert first.green and second.green
    assert gate_runner.executions + merger.executions == 1
