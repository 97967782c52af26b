"""The charter's test criteria are frozen for every unit: a unit may neither write the test
at a criterion's node id nor change a fixture beside it (the approval pins the function,
the frozen file keeps what it stands on). Pure: the gate runner's fold and the scope
rules, as the gate runner applies them to every unit commit."""

from __future__ import annotations

from schemas import Actor, UnitPlanned
from schemas.charter import Charter, CharterApproved, CharterCriterion
from workers.gate_runner.decide import FOLD, scope_of
from workers.gates.scope import breaches

P = "proj"
SYSTEM = Actor(role="system", principal="charter")
CRITERION = "tests/test_goals.py::test_thousands"


def approved() -> CharterApproved:
    charter = Charter(
        id="c1",
        title="t",
        criteria=(
            CharterCriterion(id="thousands", text="1,234.50", test=CRITERION),
            CharterCriterion(id="boots", text="boots", check="boot"),
        ),
    )
    return CharterApproved(project=P, actor=SYSTEM, charter=charter)


def test_a_unit_writing_a_charter_criterion_file_is_a_scope_breach() -> None:
    """The unit owns every file (``*``), and no slice plan names the criterion: the
    charter alone freezes ``tests/test_goals.py``."""
    planned = UnitPlanned(project=P, actor=SYSTEM, unit="U1", slice="S1", files=["*"])
    state = FOLD.fold([planned, approved()])
    scope = scope_of(state, "U1")
    assert CRITERION in scope.all_criteria
    found = breaches(
        ["tests/test_goals.py", "calc/fmt.py"],
        files=scope.files,
        own_criteria=scope.criteria,
        all_criteria=scope.all_criteria,
        frozen_globs=[],
        read=lambda side, path: None,
    )
    assert [(b.path, b.kind) for b in found] == [("tests/test_goals.py", "frozen")]


def test_without_a_charter_the_same_edit_is_in_scope() -> None:
    """The control: the breach above comes from the charter, not from the file's name."""
    planned = UnitPlanned(project=P, actor=SYSTEM, unit="U1", slice="S1", files=["*"])
    scope = scope_of(FOLD.fold([planned]), "U1")
    found = breaches(
        ["tests/test_goals.py"],
        files=scope.files,
        own_criteria=scope.criteria,
        all_criteria=scope.all_criteria,
        frozen_globs=[],
        read=lambda side, path: None,
    )
    assert found == []


def test_a_skeleton_unit_writes_the_charters_tests_for_review() -> None:
    """The skeleton slice is where the criterion tests are written (the operator reviews
    them before any build slice): its units may write those files; a build unit may not."""
    from schemas.slices import PlannedUnit, SlicePlan, SlicePlanAccepted

    skeleton = SlicePlan(slice="S1", skeleton=True, units=[PlannedUnit(id="U1", files=["*"])])
    accepted = SlicePlanAccepted(project=P, actor=SYSTEM, plan=skeleton, cause="x")
    writer = UnitPlanned(project=P, actor=SYSTEM, unit="U1", slice="S1", files=["*"])
    builder = UnitPlanned(project=P, actor=SYSTEM, unit="U2", slice="S2", files=["*"])
    state = FOLD.fold([approved(), accepted, writer, builder])
    assert CRITERION not in scope_of(state, "U1").all_criteria
    assert CRITERION in scope_of(state, "U2").all_criteria
