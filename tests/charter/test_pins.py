"""What a pin compares: a test's whole file as a syntax tree (layout and comments aside;
a rebinding, a fixture or an import anywhere in it counts), a charter's ``source``
checked at submission, and a contract that would write a pinned file otherwise refused
before it is proposed. Pure."""

from __future__ import annotations

import pytest

from loopbus.charter_file import parse_charter
from loopbus.errors import UsageError
from projections.charter_pins import contract_pin_problems
from schemas.charter import Charter, CharterCriterion
from schemas.contract import ContractChanges, NewCriterion
from schemas.criterion_source import body_digest, source_digest
from schemas.errors import InvalidValue
from schemas.slices import PlannedUnit, SlicePlan

NODE = "tests/test_fmt.py::test_thousands"
PINNED = (
    "from calc.fmt import fmt\n\n\ndef test_thousands():\n    assert fmt(1234.5) == '1,234.50'\n"
)


def test_layout_and_comments_do_not_change_a_pin_code_anywhere_in_the_file_does() -> None:
    pin = source_digest(PINNED, NODE)
    assert pin is not None
    laid_out = (
        "# grouping\nfrom calc.fmt import fmt\n\ndef test_thousands():  # the grouping\n"
        '    assert fmt(1234.5) == "1,234.50"\n'
    )
    assert body_digest(laid_out, NODE) == pin
    for changed in (
        PINNED.replace("==", "!="),
        PINNED.replace("from calc.fmt import fmt", "def fmt(x):\n    return '1,234.50'"),
        PINNED + "\n\ndef fmt(x):\n    return '1,234.50'\n",  # rebound after the test
        PINNED + "\n\ntest_thousands = lambda: None\n",
        PINNED + "\nif True:\n    def test_thousands():\n        pass\n",
        "import pytest\n" + PINNED.replace("def test", "@pytest.mark.skip\ndef test"),
    ):
        assert body_digest(changed, NODE) != pin, changed


def test_a_file_without_the_test_pins_nothing() -> None:
    module = "class TestFmt:\n    def test_thousands(self):\n        assert fmt(1) == '1.00'\n"
    assert body_digest(module, "tests/test_fmt.py::TestFmt::test_thousands[case-1]")
    assert body_digest(module, NODE) is None, "a method is not the module-level test"


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("def test_other():\n    pass\n", "defines no test 'test_thousands'"),
        ("def test_thousands(:\n", "is not Python"),
    ],
)
def test_a_source_that_is_not_the_test_is_refused_at_submission(source: str, says: str) -> None:
    text = (
        'id = "c"\ntitle = "t"\n[[criteria]]\nid = "k"\ntext = "groups"\n'
        f"test = {NODE!r}\nsource = '''\n{source}'''\n"
    )
    with pytest.raises(UsageError) as refused:
        parse_charter(text, "charter.toml")
    line = str(refused.value)
    assert "criteria[0] (k).source" in line and says in line and "\n" not in line


def test_a_check_criterion_has_no_source() -> None:
    text = 'id = "c"\ntitle = "t"\n[[criteria]]\nid = "k"\ntext = "x"\ncheck = "lint"\n'
    with pytest.raises(UsageError, match="source is a test criterion's text"):
        parse_charter(text + "source = 'def test_x(): pass'\n", "charter.toml")


CENTS = "\n\ndef test_cents():\n    pass\n"


def test_criteria_of_one_file_share_its_source() -> None:
    other = "tests/test_fmt.py::test_cents"
    with pytest.raises(InvalidValue, match="criteria in one file give the same text"):
        Charter(
            id="c",
            title="t",
            criteria=(
                CharterCriterion(id="k", text="g", test=NODE, source=PINNED),
                CharterCriterion(
                    id="m",
                    text="c",
                    test=other,
                    source=PINNED + "\n\ndef test_cents():\n    pass\n",
                ),
            ),
        )
    with pytest.raises(InvalidValue, match="defines no test 'test_cents'"):
        Charter(
            id="c",
            title="t",
            criteria=(
                CharterCriterion(id="k", text="g", test=NODE, source=PINNED),
                CharterCriterion(id="m", text="c", test=other),
            ),
        )


def plan(*texts: str) -> SlicePlan:
    contract = ContractChanges(criteria=tuple(NewCriterion(test=NODE, text=t) for t in texts))
    return SlicePlan(slice="S2", units=[PlannedUnit(id="u", criteria=[NODE])], contract=contract)


def test_a_contract_writing_a_pinned_file_otherwise_is_refused() -> None:
    charter = Charter(
        id="c",
        title="t",
        criteria=(CharterCriterion(id="k", text="groups", test=NODE, source=PINNED),),
    )
    assert contract_pin_problems(plan(PINNED), charter) == []
    head, tail = PINNED.split("\n\n\n")
    assert contract_pin_problems(plan(head, tail), charter) == [], "composed as landing does"
    [problem] = contract_pin_problems(plan(PINNED, "def helper():\n    pass\n"), charter)
    assert "contract.criteria[0] (tests/test_fmt.py)" in problem and "'k' pins" in problem
    unpinned = Charter(id="c", title="t", criteria=(CharterCriterion(id="k", text="g", test=NODE),))
    assert contract_pin_problems(plan("def test_thousands():\n    pass\n"), unpinned) == []
