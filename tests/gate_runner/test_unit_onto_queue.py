"""A unit's commit is gated on the trunk the merge queue will make (trunk with the heads
queued ahead of it merged in), so its merge candidate, stacked on those heads or on the
trunk they landed as, is the same tree and runs nothing. Only a green result there
answers: red there, or a prediction that does not merge, and the unit is judged on
trunk's tip alone. Real git (dulwich), a real server; candidates made and gated as the
merger makes and gates them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gate_repos import GitRepo, config, merger_gates
from logkit import log_events, of

from bus import Bus
from projections import gates
from schemas import new_id
from schemas.gates import GateSuiteCompleted
from workers.gates.runner import GateRunner
from workers.gates.unitgate import UnitScope, gate_unit
from workers.kernel.oneshot import carry_out
from workers.merger import gitops

# The check reads what the queued unit ahead may change, so a wrong tree answers wrongly.
CHECK = (
    '\n[[check]]\nid = "ok"\ncommand = "python -c \'import other; assert other.y == 2\'"\n'
    'parser = "exit-code"\ntimeout = 60\n'
)
MAIN = b"refs/heads/main"


class Queue:
    """Trunk ``main`` at T; unit B's head queued for merging; unit C's head, both on T."""

    def __init__(self, repo: GitRepo, project: str, b_files: dict[str, str]) -> None:
        self.repo = repo
        self.files = {"loopbus.toml": config(project, CHECK), "other.py": "y = 2\n"}
        self.t = repo.commit(self.files, message="trunk")
        repo.repo.refs[MAIN] = self.t.encode()
        self.b = repo.commit({**self.files, **b_files}, parent=self.t, message="unit B")
        self.c = repo.commit({**self.files, "c.py": "c = 1\n"}, parent=self.t, message="unit C")
        self.scope = UnitScope(files=("c.py",), criteria=(), all_criteria=(), base=self.t)

    def merged(self, ours: str, theirs: str) -> str:
        attempt = gitops.merge(self.repo.path, ours, theirs, "merge")
        assert attempt.commit is not None
        return attempt.commit


async def test_the_candidate_stacked_on_the_queue_reuses_the_units_run(
    bus: Bus,
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    tmp_path: Path,
) -> None:
    """C's suite runs on T + B + C and says so (``onto`` is the predicted trunk, no trunk
    commit); C's candidate stacked on B's, and again once B has landed, runs nothing."""
    queue = Queue(git("repo"), project, {"b.py": "b = 1\n"})
    units = make_runner(queue.repo, project=project)
    suite = await gate_unit(
        units, queue.c, unit="C", cause=new_id(), scope=queue.scope, trunk="main", ahead=[queue.b]
    )
    await carry_out(bus, suite.intents)
    assert suite.green and units.executions == 1
    fact = suite.suite
    assert fact is not None and fact.commit == queue.c
    assert fact.onto is not None and fact.onto != queue.t  # the prediction, not trunk's tip

    b_candidate = queue.merged(queue.t, queue.b)  # the merger's stack: T + B, then + C
    stacked = queue.merged(b_candidate, queue.c)
    assert fact.tree == queue.repo.tree_of(stacked)
    merger = merger_gates(bus, queue.repo, tmp_path, project)
    judge = queue.files["loopbus.toml"]
    tested = await merger.run(queue.repo.path, stacked, trunk=b_candidate, criteria=(), judge=judge)
    assert tested.green and tested.executed == 0

    queue.repo.repo.refs[MAIN] = b_candidate.encode()  # B lands: C's candidate on trunk
    landed = queue.merged(b_candidate, queue.c)
    tested = await merger.run(queue.repo.path, landed, trunk=b_candidate, criteria=(), judge=judge)
    assert tested.green and tested.executed == 0

    state = gates.initial()
    for event in await log_events(bus, project):
        gates.apply(state, event)
    [stored] = of(GateSuiteCompleted, await log_events(bus, project), id=fact.id)
    assert gates.judge(state, stored) is None  # signed as it reads, the predicted onto too


async def test_red_on_the_predicted_trunk_is_judged_on_trunk_alone(
    bus: Bus,
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
) -> None:
    """B, queued ahead, breaks what the check reads: C is red on T + B + C, which is B's
    doing, not C's. The answer is C's suite on trunk's tip alone, green, naming T."""
    queue = Queue(git("repo"), project, {"other.py": "y = 3\n"})
    units = make_runner(queue.repo, project=project)
    suite = await gate_unit(
        units, queue.c, unit="C", cause=new_id(), scope=queue.scope, trunk="main", ahead=[queue.b]
    )
    assert units.executions == 2  # the prediction (red), then trunk's tip
    assert suite.green and suite.suite is not None
    assert suite.suite.onto == queue.t
    assert suite.suite.tree == queue.repo.tree_of(queue.merged(queue.t, queue.c))


async def test_a_prediction_that_does_not_merge_gates_on_trunk_alone(
    bus: Bus,
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
) -> None:
    """B, queued ahead, wrote the file C writes, differently: C does not merge onto the
    prediction, but does onto trunk. It is gated there, and no conflict is reported against
    a trunk that does not exist yet."""
    queue = Queue(git("repo"), project, {"c.py": "c = 2\n"})
    units = make_runner(queue.repo, project=project)
    suite = await gate_unit(
        units, queue.c, unit="C", cause=new_id(), scope=queue.scope, trunk="main", ahead=[queue.b]
    )
    assert units.executions == 1
    assert suite.green and suite.suite is not None and suite.suite.onto == queue.t


async def test_a_queued_head_this_clone_lacks_gates_on_trunk_alone(
    bus: Bus,
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
) -> None:
    queue = Queue(git("repo"), project, {"b.py": "b = 1\n"})
    units = make_runner(queue.repo, project=project)
    suite = await gate_unit(
        units, queue.c, unit="C", cause=new_id(), scope=queue.scope, trunk="main", ahead=["f" * 40]
    )
    assert units.executions == 1
    assert suite.green and suite.suite is not None and suite.suite.onto == queue.t
