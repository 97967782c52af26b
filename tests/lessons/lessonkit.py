"""Events that set the scene for the lessons tests: a slice's dispatches, rounds, a red
merge candidate and the close, each a fact as its daemon would publish it."""

from __future__ import annotations

from datetime import UTC, datetime

from projections import lessons, ratchet
from schemas import Actor, Event
from schemas.ids import new_id
from schemas.merges import CandidateTested, FailingTest
from schemas.reviews import RoundClosed
from schemas.slices import BootResult, SliceClosed, UnitDispatched
from workers.kernel import World

SYSTEM = Actor(role="system", principal="tests")
NOW = datetime(2026, 1, 1, tzinfo=UTC)
TEST = "tests/test_total.py::test_total"


def dispatched(project: str, slice_id: str, unit: str) -> UnitDispatched:
    return UnitDispatched(
        project=project, actor=SYSTEM, slice=slice_id, unit=unit, wave=0, sub_wave=0, position=0
    )


def round_closed(
    project: str,
    unit: str,
    n: int,
    *,
    passed: bool = True,
    source: str = "review",
    keys: tuple[str, ...] = (),
    checks: tuple[str, ...] = (),
) -> RoundClosed:
    return RoundClosed(
        project=project,
        actor=SYSTEM,
        unit=unit,
        round=n,
        head="e" * 40,
        source=source,  # type: ignore[arg-type]
        finding_keys=list(keys),
        blocking_keys=list(keys),
        failing_checks=list(checks),
        failure_signature="sig",
        diff_digest="d",
        passed=passed,
        convergence="converging",
        action="approved" if passed else "continue",
        cause=new_id(),
    )


def red_candidate(project: str, unit: str, test: str = TEST) -> CandidateTested:
    return CandidateTested(
        project=project,
        actor=SYSTEM,
        stage="candidate",
        unit=unit,
        head="a" * 40,
        candidate="b" * 40,
        tree="c" * 40,
        base="d" * 40,
        outcome="fail",
        failing=[FailingTest(test=test, check="tests", message="assert 0 == 3")],
    )


def closed(project: str, slice_id: str, done: tuple[str, ...] = ()) -> SliceClosed:
    return SliceClosed(
        project=project,
        actor=SYSTEM,
        slice=slice_id,
        boot=BootResult(outcome="pass"),
        done=list(done),
    )


def world(project: str, events: list[Event]) -> World:
    folds = (lessons.FOLD, ratchet.FOLD)
    return World(
        project=project,
        states={fold.name: fold.fold(events) for fold in folds},
        seqs={},
        now=NOW,
        actor=SYSTEM,
        outside={},
    )
