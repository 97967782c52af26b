"""What a pin compares: a test's function as a syntax tree (layout and comments aside,
decorators included), a charter's ``source`` checked at submission, and a contract that
would write a pinned test with another function refused before it is proposed. Pure."""

from __future__ import annotations

import pytest
from loopbus.projections.charter_pins import contract_pin_problems
from loopbus.schemas.charter import Charter, CharterCriterion
from loopbus.schemas.contract import ContractChanges, NewCriterion
from loopbus.schemas.criterion_source import body_digest, source_digest
from loopbus.schemas.slices import PlannedUnit, SlicePlan

from loopbus.charter_file import parse_charter
from loopbus.errors import UsageError

NODE = "tests/test_fmt.py::test_thousands"
PINNED = "def test_thousands():\n    assert fmt(1234.5) == '1,234.50'\n"


def test_layout_and_comments_do_not_change_a_pin_code_does() -> None:
    pin = source_digest(PINNED, NODE)
    assert pin is not None
    laid_out = (
        "import os\n\n\ndef test_thousands():  # the grouping\n"
        '    assert fmt(1234.5) == "1,234.50"\n'
    )
    assert body_digest(laid_out, NODE) == pin
    for changed in (
        "def test_thousands():\n    assert fmt(1234.5) != '1,234.50'\n",
        "def test_thousands():\n    assert True\n",
        "@pytest.mark.skip\ndef test_thousands():\n    assert fmt(1234.5) == '1,234.50'\n",
        "def test_thousands(x=1):\n    assert fmt(1234.5) == '1,234.50'\n",
    ):
        assert body_digest(changed, NODE) != pin, changed


def test_a_method_of_a_test_class_is_found_and_the_last_definition_wins() -> None:
    module = (
        "class TestFmt:\n    def test_thousands(self):\n        assert False\n\n"
        "    def test_thousands(self):\n        assert fmt(1) == '1.00'\n"
    )
    node = "tests/test_fmt.py::TestFmt::test_thousands[case-1]"
    source = "def test_thousands(self):\n    assert fmt(1) == '1.00'\n"
    assert body_digest(module, node) == source_digest(source, node)
    assert body_digest(module, "tests/test_fmt.py::test_thousands") is None


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("def test_other():\n    pass\n", "defines no function 'test_thousands'"),
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


def plan(text: str) -> SlicePlan:
    contract = ContractChanges(criteria=(NewCriterion(test=NODE, text=text),))
    return SlicePlan(slice="S2", units=[PlannedUnit(id="u", criteria=[NODE])], contract=contract)


def test_a_contract_writing_a_pinned_test_otherwise_is_refused() -> None:
    charter = Charter(
        id="c",
        title="t",
        criteria=(CharterCriterion(id="k", text="groups", test=NODE, source=PINNED),),
    )
    assert contract_pin_problems(plan("from x import fmt\n\n\n" + PINNED), charter) == []
    [problem] = contract_pin_problems(plan("def test_thousands():\n    pass\n"), charter)
    assert "contract.criteria[0]" in problem and "'k' pins this test's function" in problem
    unpinned = Charter(id="c", title="t", criteria=(CharterCriterion(id="k", text="g", test=NODE),))
    assert contract_pin_problems(plan("def test_thousands():\n    pass\n"), unpinned) == []
