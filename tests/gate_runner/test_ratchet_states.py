"""The gate runner reads each check's ratchet state: a gate that only reports runs, is
recorded, and does not decide the suite's outcome."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from gate_repos import GitRepo, config
from gatekit import run_commit

from projections import ratchet
from schemas import Actor, UnitTransitioned
from schemas.gates import GateSuiteCompleted, canonical_bytes
from schemas.ratchet import GateMoved
from workers.gate_runner.decide import FOLD, decide
from workers.gate_runner.effects import RunSuite
from workers.gates.runner import GateRunner
from workers.kernel import World

FAILING = '\n[[check]]\nid = "memo"\ncommand = "python -c \'raise SystemExit(3)\'"\ntimeout = 30\n'
PASSING = '\n[[check]]\nid = "ok"\ncommand = "python -c \'pass\'"\ntimeout = 30\n'
SYSTEM = Actor(role="system", principal="tests")
CLAIM = "01J00000000000000000000000"


def drafted(project: str, gate: str) -> GateMoved:
    return GateMoved(
        project=project, actor=SYSTEM, gate=gate, scope="local", move="draft", source=None,
        target="Drafted", claim=CLAIM, authority="builder:b1",
    )  # fmt: skip


async def test_a_drafted_gate_runs_and_reports_but_does_not_block(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """With check memo's gate Drafted on the log, its failure is recorded and listed as
    advisory, and the suite passes on the other check; with no ratchet record it blocks."""
    repo = git("repo")
    repo.commit({"loopbus.toml": config(project, FAILING + PASSING)})
    runner = make_runner(repo)
    advisory = ratchet.advisory(ratchet.FOLD.fold([drafted(project, "memo")]))
    suite = await run_commit(runner, advisory=advisory)
    assert suite.check("memo").outcome == "fail"
    assert suite.outcome == "pass" and suite.suite is not None
    assert suite.suite.advisory == ["memo"]
    blocked = await run_commit(runner, force=True)
    assert blocked.outcome == "fail" and blocked.suite is not None
    assert blocked.suite.advisory == []


def test_the_decision_hands_the_runner_what_the_ratchet_fold_says() -> None:
    """The run effect carries the advisory gates folded from the log (a replayable fold),
    and a suite without advisory checks signs the same bytes as before the field existed."""
    commit = UnitTransitioned(
        project="p", actor=SYSTEM, unit="U1", state="working", by="commit", commit="a" * 40
    )
    events = [drafted("p", "memo"), commit]
    world = World(
        project="p",
        states={FOLD.name: FOLD.fold(events), ratchet.FOLD.name: ratchet.FOLD.fold(events)},
        seqs={},
        now=datetime(2030, 1, 1, tzinfo=UTC),
        actor=SYSTEM,
        outside={},
    )
    (effect,) = [i for i in decide(world, 1) if isinstance(i, RunSuite)]
    assert effect.advisory is not None
    assert effect.advisory.local == frozenset({"memo"})
    old_shape = GateSuiteCompleted(
        project="p", actor=SYSTEM, outcome="error", error="x", runner="r"
    )
    assert b"advisory" not in canonical_bytes(old_shape)
