"""A unit's commit is gated as its merge onto the trunk of the moment, so its merge
candidate on an unmoved trunk is answered from the cache; a result on one trunk never
answers for another; a unit that does not merge onto trunk is told so. Real git (dulwich),
a real server; the unit's suite gated as the gate-runner daemon gates it, the candidate by
a second runner with a key of its own, as the merger does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
from gate_repos import GitRepo, config
from logkit import log_events, of

from bus import Bus
from projections import builds, gates
from schemas import Actor, FindingRaised, new_id
from schemas.gates import GateSuiteCompleted, canonical_bytes
from schemas.merges import MergeConflicted
from schemas.slices import UnitDispatched
from workers.gates.runner import GateRunner
from workers.gates.signing import load_or_create
from workers.gates.unitgate import UnitScope, gate_unit
from workers.kernel.oneshot import carry_out
from workers.merger import gitops
from workers.merger.gates import RunnerTrunkGates

# The check reads the module trunk moves, so a wrong tree gives a wrong answer.
CHECK = (
    '\n[[check]]\nid = "ok"\ncommand = "python -c \'import other; assert other.y == 2\'"\n'
    'parser = "exit-code"\ntimeout = 60\n'
)
MAIN = b"refs/heads/main"


class Trunk:
    """Trunk ``main`` at T0, a unit's head on T0, and trunk moved past T0 by others."""

    def __init__(self, repo: GitRepo, project: str) -> None:
        self.repo = repo
        self.files = {"loopbus.toml": config(project, CHECK), "other.py": "y = 2\n"}
        self.t0 = repo.commit(self.files, message="trunk")
        self.head = repo.commit({**self.files, "feature.py": "x = 1\n"}, parent=self.t0)
        self.scope = UnitScope(files=("feature.py",), criteria=(), all_criteria=(), base=self.t0)
        self.main = self.t0
        repo.repo.refs[MAIN] = self.t0.encode()

    def move(self, files: dict[str, str]) -> str:
        """Another unit lands: trunk ``main`` moves on (HEAD, the unit's side, does not)."""
        self.files = {**self.files, **files}
        self.main = self.repo.commit(self.files, parent=self.main)
        self.repo.repo.refs[MAIN] = self.main.encode()
        return self.main

    def candidate(self) -> str:
        """The merger's candidate: the unit's head merged onto trunk as it is now."""
        attempt = gitops.merge(self.repo.path, self.main, self.head, "merge the unit")
        assert attempt.commit is not None
        return attempt.commit


def merger_gates(bus: Bus, repo: GitRepo, tmp_path: Path, project: str) -> RunnerTrunkGates:
    signer = load_or_create(tmp_path / "merger-data", "merger")
    return RunnerTrunkGates(GateRunner(bus, repo.path, signer, principal="merger", project=project))


async def test_the_candidate_on_an_unmoved_trunk_reuses_the_units_run_on_trunk(
    bus: Bus,
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    tmp_path: Path,
) -> None:
    """Trunk moved since the unit's base: the unit's suite runs on its merge onto trunk's
    tip and says so (``onto``, the merge's tree, the unit's head as ``commit``), and the
    merger's candidate on that same tip runs nothing."""
    trunk = Trunk(git("repo"), project)
    moved = trunk.move({"later.py": "z = 3\n"})
    units = make_runner(trunk.repo, project=project)
    suite = await gate_unit(
        units, trunk.head, unit="u1", cause=new_id(), scope=trunk.scope, trunk="main"
    )
    await carry_out(bus, suite.intents)
    assert suite.outcome == "pass" and units.executions == 1
    candidate = trunk.candidate()
    tested = await merger_gates(bus, trunk.repo, tmp_path, project).run(
        trunk.repo.path, candidate, trunk=moved, criteria=(), judge=trunk.files["loopbus.toml"]
    )
    assert tested.green and tested.executed == 0
    fact = suite.suite
    assert fact is not None
    assert (fact.commit, fact.onto, fact.tree) == (trunk.head, moved, trunk.repo.tree_of(candidate))
    stored = of(GateSuiteCompleted, await log_events(bus, project), id=fact.id)
    state = gates.initial()
    for event in await log_events(bus, project):
        gates.apply(state, event)
    assert stored and gates.judge(state, stored[0]) is None  # signed as it reads, onto and all


async def test_a_run_on_one_trunk_does_not_answer_for_another(
    bus: Bus,
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    tmp_path: Path,
) -> None:
    """The unit passed on trunk T1; trunk then moved to T2, which breaks what the check reads.
    The candidate on T2 runs again and is red: the result is keyed by the tree it ran on."""
    trunk = Trunk(git("repo"), project)
    t1 = trunk.move({"later.py": "z = 3\n"})
    units = make_runner(trunk.repo, project=project)
    suite = await gate_unit(
        units, trunk.head, unit="u1", cause=new_id(), scope=trunk.scope, trunk="main"
    )
    await carry_out(bus, suite.intents)
    assert suite.green and suite.suite is not None and suite.suite.onto == t1
    t2 = trunk.move({"other.py": "y = 3\n"})
    tested = await merger_gates(bus, trunk.repo, tmp_path, project).run(
        trunk.repo.path, trunk.candidate(), trunk=t2, criteria=(), judge=trunk.files["loopbus.toml"]
    )
    assert tested.executed == 1 and tested.outcome == "fail"


async def test_a_unit_that_does_not_merge_onto_trunk_is_told_and_not_gated(
    bus: Bus,
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
) -> None:
    """Trunk changed the file the unit changed, differently: no check runs; the ask is
    answered red with a ``unit-merge`` finding naming the file and a ``merge.conflicted``
    fact, so the builder's fold keeps the collision its conflict round starts from."""
    trunk = Trunk(git("repo"), project)
    moved = trunk.move({"feature.py": "x = 2\n"})  # trunk added it too, with another value
    units = make_runner(trunk.repo, project=project)
    dispatched = UnitDispatched(
        project=project,
        actor=units.actor,
        slice="S1",
        unit="u1",
        base=trunk.t0,
        wave=0,
        sub_wave=0,
        position=0,
    )
    await bus.publish(dispatched)
    suite = await gate_unit(
        units, trunk.head, unit="u1", cause=new_id(), scope=trunk.scope, trunk="main"
    )
    await carry_out(bus, suite.intents)
    assert suite.outcome == "error" and units.executions == 0
    events = await log_events(bus, project)
    (finding,) = of(FindingRaised, events, criterion="unit-merge")
    assert finding.cls == "merge-conflict" and finding.owner == "builder:u1"
    assert finding.evidence["paths"] == ["feature.py"] and finding.evidence["trunk"] == moved
    (conflicted,) = of(MergeConflicted, events, unit="u1")
    assert (conflicted.head, conflicted.base, conflicted.finding) == (
        trunk.head,
        moved,
        finding.id,
    )
    state = builds.initial()
    for event in events:
        builds.apply(state, event)
    collision = state.units["u1"].collision
    assert collision is not None and collision.head == trunk.head and collision.trunk == moved


def test_a_suites_trunk_is_signed_and_absent_from_the_bytes_when_not_set(tmp_path: Path) -> None:
    """``onto`` is covered by the signature (a suite moved to another trunk no longer
    verifies), and a suite without it signs the bytes it signed before the field existed."""
    signer = load_or_create(tmp_path / "data")
    sha = "a" * 40
    plain = GateSuiteCompleted(
        project="p",
        actor=Actor(role="system", principal="gate-runner"),
        commit=sha,
        outcome="error",
        error="x",
        runner=signer.runner,
    )
    assert b"onto" not in canonical_bytes(plain)
    on_trunk = signer.sign(msgspec.structs.replace(plain, onto="b" * 40))
    moved = msgspec.structs.replace(on_trunk, onto="c" * 40)
    state = gates.initial()
    gates.apply(state, signer.registration("p", plain.actor))
    assert gates.judge(state, on_trunk) is None
    assert gates.judge(state, moved) is not None
