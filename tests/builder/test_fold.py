"""The builds projection alone, on event lists: which units owe a builder round."""

from __future__ import annotations

from projections.builds import FOLD, Collision
from projections.units import FOLD as UNITS
from schemas import Actor
from schemas.gates import GateSuiteCompleted, SuiteEntry
from schemas.ids import new_id
from schemas.merges import MergeConflicted
from schemas.reports import CommitReport
from schemas.slices import UnitDispatched
from schemas.units import UnitTransitioned
from workers.builder.decide import _collision

SYSTEM = Actor(role="system", principal="tests")
B1 = Actor(role="builder", principal="b1")
HEAD = "a" * 40


def dispatched() -> UnitDispatched:
    return UnitDispatched(
        project="p", actor=SYSTEM, slice="S", unit="U", wave=0, sub_wave=0, position=0,
        base="b" * 40,
    )  # fmt: skip


def suite(outcome: str, commit: str = HEAD) -> GateSuiteCompleted:
    entry = SuiteEntry(check="tests", outcome=outcome, cached=False, result=new_id(), duration_s=0)  # type: ignore[arg-type]
    return GateSuiteCompleted(
        project="p", actor=SYSTEM, commit=commit, unit="U", reason="unit", outcome=outcome,  # type: ignore[arg-type]
        checks=[entry], runner="r",
    )  # fmt: skip


def committed() -> list[object]:
    report = CommitReport(project="p", actor=B1, unit="U", sha=HEAD)
    moved = UnitTransitioned(
        project="p", actor=SYSTEM, unit="U", prior="working", state="working", by="commit",
        cause=report.id, commit=HEAD,
    )  # fmt: skip
    return [report, moved]


def test_a_dispatch_owes_a_round_until_the_builder_commits() -> None:
    """Dispatch sets the trigger; the builder's commit answers it."""
    state = FOLD.fold([dispatched()])
    assert state.units["U"].owes_round() and state.units["U"].trigger_kind == "dispatched"
    state = FOLD.fold(committed(), state)  # type: ignore[arg-type]
    assert not state.units["U"].owes_round() and state.units["U"].rounds == 1


def test_a_red_suite_for_the_head_owes_another_round() -> None:
    """A failing unit suite on the unit's head asks for a round; a passing one does not."""
    state = FOLD.fold([dispatched(), *committed(), suite("pass")])  # type: ignore[list-item]
    assert not state.units["U"].owes_round()
    state = FOLD.fold([suite("fail")], state)
    assert state.units["U"].owes_round() and state.units["U"].trigger_kind == "gates-red"


def test_a_red_suite_for_another_commit_changes_nothing() -> None:
    """Only the head's suite counts: an old commit's red suite is not this round's."""
    state = FOLD.fold([dispatched(), *committed(), suite("fail", commit="c" * 40)])  # type: ignore[list-item]
    assert not state.units["U"].owes_round()


def test_another_principals_commit_claim_does_not_answer_for_the_builder() -> None:
    """An operator's commit claim is not the builder's answer."""
    operator = Actor(role="operator", principal="olive")
    report = CommitReport(project="p", actor=operator, unit="U", sha=HEAD)
    state = FOLD.fold([dispatched(), report])
    assert state.units["U"].owes_round()


def conflicted(actor: Actor = SYSTEM, head: str = HEAD) -> MergeConflicted:
    return MergeConflicted(
        project="p", actor=actor, unit="U", head=head, base="c" * 40, paths=["app.py"],
        finding="F1", cause="q1",
    )  # fmt: skip


def test_a_merge_conflict_of_the_head_makes_its_next_round_a_conflict_round() -> None:
    """The merger's conflict fact is kept for the unit; the round on that head carries it
    (trunk and finding), a round on a later head does not."""
    events = [dispatched(), *committed(), conflicted()]
    state = FOLD.fold(events)  # type: ignore[arg-type]
    assert state.units["U"].collision == Collision(
        fact=events[-1].id,
        finding="F1",
        head=HEAD,
        trunk="c" * 40,  # type: ignore[attr-defined]
    )
    view = UNITS.fold(events)  # type: ignore[arg-type]
    assert _collision(state.units["U"], view.units["U"]) == state.units["U"].collision
    later = conflicted(head="d" * 40)
    assert _collision(FOLD.fold([later], state).units["U"], view.units["U"]) is None


def test_a_conflict_fact_from_anyone_but_the_system_is_not_kept() -> None:
    """A builder's forged merge.conflicted (to be handed some other commit as 'trunk') never
    reaches the fold."""
    state = FOLD.fold([dispatched(), *committed(), conflicted(actor=B1)])  # type: ignore[list-item]
    assert state.units["U"].collision is None
