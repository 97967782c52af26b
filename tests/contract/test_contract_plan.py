"""A plan's ``[contract]``: read from TOML and JSON, validated with and without trunk, and
what the merger would write for it (pure: no bus, no daemon)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import msgspec
import pytest

from projections import contract_plan
from projections.errors import PlanInvalid
from projections.plan_parse import parse_plan, parse_plan_text
from projections.planning import unclaimed_extras, validate
from schemas import Actor, decode_event, encode_event
from schemas.contract import ContractChanges, NewCheck, NewCriterion
from schemas.slices import PlannedUnit, PlanSubmission, SlicePlan
from workers.gates import config as gates_config
from workers.gates import parsers as gate_parsers
from workers.gates.config import parse_config
from workers.gates.contract import (
    contract_files,
    contract_refusals,
    new_config,
    proposal_refusals,
)
from workers.gates.scope import breaches

CRITERION = """
from calc import add


def test_add():
    assert add(1, 2) == 3
"""

PLAN = f'''
[slice]
id = "S1"

[[unit]]
id = "U1"
files = ["calc.py"]
criteria = ["tests/test_calc.py::test_add"]

[contract]
capabilities = []

[[contract.checks]]
id = "compiles"
command = "python -m compileall -q ."

[[contract.criteria]]
test = "tests/test_calc.py::test_add"
text = """{CRITERION}"""
'''

CONFIG = """\
[project]
id = "demo"

# the suite; criteria wait here until a unit clears them
[[check]]
id = "tests"
command = "python -m pytest -q tests"
parser = "pytest"
pending = ["tests/test_old.py::test_old"]

[merge]
trunk_only = []
"""


def test_the_contract_table_is_read_from_toml_and_json_alike() -> None:
    plan = parse_plan_text(PLAN)
    assert plan.contract == ContractChanges(
        checks=(NewCheck(id="compiles", command="python -m compileall -q ."),),
        criteria=(NewCriterion(test="tests/test_calc.py::test_add", text=CRITERION.lstrip("\n")),),
    )
    doc = tomllib.loads(PLAN)
    assert parse_plan(json.dumps(doc), "json") == plan


def test_a_plan_without_a_contract_encodes_and_decodes_as_before() -> None:
    """``contract`` is omitted when absent, and an event written before it existed (no
    such field) decodes unchanged."""
    old = SlicePlan(slice="S1", units=[PlannedUnit(id="U1")])
    assert b"contract" not in msgspec.json.encode(old)
    claim = PlanSubmission(project="p", actor=Actor(role="planner", principal="x"), plan=old)
    stored = json.loads(encode_event(claim))
    assert "contract" not in stored["plan"]
    assert decode_event(json.dumps(stored).encode()) == claim
    with_contract = msgspec.structs.replace(claim, plan=parse_plan_text(PLAN))
    assert decode_event(encode_event(with_contract)) == with_contract


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            ('test = "tests/test_calc.py::test_add"', 'test = "tests/calc.py::add"'),
            "contract.criteria[0].test='tests/calc.py::add' is not a well-formed node id",
        ),
        (
            ("def test_add():", "def test_sum():"),
            "contract.criteria[0].text does not define test_add",
        ),
        (
            ("def test_add():", "def test_add(:"),
            "contract.criteria[0].text does not parse as Python",
        ),
        (
            ('criteria = ["tests/test_calc.py::test_add"]', "criteria = []"),
            "contract.criteria[0].test='tests/test_calc.py::test_add' is claimed by no unit",
        ),
        (
            ('command = "python -m compileall -q ."', 'command = "x"\nimage = "python:3"'),
            "contract.checks[0].image='python:3': a contract adds host checks only",
        ),
        (
            ('command = "python -m compileall -q ."', 'command = "x"\nparser = "junit"'),
            "contract.checks[0].parser='junit' is not valid: use one of pytest, ruff, exit-code",
        ),
        (
            ("def test_add():", "def test_sub():\n    pass\n\n\ndef test_add():"),
            "contract.criteria[0].text holds FunctionDef at line",
        ),
        (
            ("from calc import add", "import pytest\npytestmark = pytest.mark.skip"),
            "contract.criteria[0].text holds Assign at line 2 beside test_add",
        ),
        (
            ("from calc import add", "import calc\ncalc.add = lambda a, b: 3"),
            "contract.criteria[0].text holds Assign at line 2 beside test_add",
        ),
        (
            ("from calc import add", "class Helper:\n    pass"),
            "contract.criteria[0].text holds ClassDef at line 1 beside test_add",
        ),
        (("capabilities = []", "capabilities = 3"), "contract.capabilities=3 must be a list"),
        (("capabilities = []", "colour = 3"), "contract: unknown field 'colour'"),
    ],
)
def test_a_wrong_contract_is_one_line_naming_field_and_fix(
    edit: tuple[str, str], expected: str
) -> None:
    with pytest.raises(PlanInvalid) as refused:
        parse_plan_text(PLAN.replace(*edit))
    assert any(p.startswith(expected) for p in refused.value.problems), refused.value.problems
    assert all("\n" not in p for p in refused.value.problems)


def test_the_gate_runners_parsers_are_the_contracts() -> None:
    """A contract's new check may name exactly the parsers the gate runner reads with."""
    assert contract_plan.PARSER_NAMES is gates_config.PARSER_NAMES
    assert set(gate_parsers.PARSERS) == set(contract_plan.PARSER_NAMES)


def test_contract_criteria_are_not_warned_about_as_unpending() -> None:
    plan = parse_plan_text(PLAN)
    assert unclaimed_extras(plan, []) == []
    assert validate(plan, []) == []


def _reader(files: dict[str, str]):  # type: ignore[no-untyped-def]
    return files.get


def test_against_trunk_a_reused_check_id_or_a_non_test_file_is_refused() -> None:
    plan = parse_plan_text(
        PLAN.replace('id = "compiles"', 'id = "tests"').replace(
            "tests/test_calc.py", "tests/test_helpers.py"
        )
    )
    problems = contract_plan.repository_problems(
        plan, ["tests"], _reader({"tests/test_helpers.py": "VALUE = 1\n"})
    )
    assert problems[0].startswith(
        "contract.checks[0].id='tests' is a check trunk has already: a contract adds checks, "
        "it never edits one"
    )
    assert "tests/test_helpers.py exists on trunk and is not a test file" in problems[1]
    again = contract_plan.repository_problems(
        parse_plan_text(PLAN), [], _reader({"tests/test_calc.py": CRITERION})
    )
    assert again == [
        "contract.criteria[0].test='tests/test_calc.py::test_add': tests/test_calc.py already "
        "defines test_add; a contract adds criteria, it never replaces one; pick a new name"
    ]


def test_the_contract_writes_criteria_one_per_line_and_keeps_the_rest_of_the_file() -> None:
    plan = parse_plan_text(PLAN)
    assert plan.contract is not None
    existing = "def test_sub():\n    assert 1 - 1 == 0\n"
    written = contract_files(CONFIG, plan.contract, _reader({"tests/test_calc.py": existing}))
    config = written.files["loopbus.toml"]
    assert '    "tests/test_old.py::test_old",\n    "tests/test_calc.py::test_add",\n' in config
    assert "# the suite; criteria wait here until a unit clears them" in config
    parsed = parse_config(config)
    assert parsed.check("tests").pending == (
        "tests/test_old.py::test_old",
        "tests/test_calc.py::test_add",
    )
    assert parsed.check("compiles").command == "python -m compileall -q ."
    assert written.files["tests/test_calc.py"].startswith(existing)
    assert "def test_add():" in written.files["tests/test_calc.py"]
    assert contract_refusals(CONFIG, config) == []


def test_editing_or_loosening_is_refused_adding_is_free() -> None:
    edited = CONFIG.replace("python -m pytest -q tests", "true")
    assert contract_refusals(CONFIG, edited) == [
        "check 'tests': edited (command); a unit may add checks, never edit one"
    ]
    cleared = CONFIG.replace('pending = ["tests/test_old.py::test_old"]', "pending = []")
    assert contract_refusals(CONFIG, cleared) == [
        "check 'tests'.pending: tests/test_old.py::test_old cleared, but it is not one of "
        "this unit's criteria"
    ]
    review = CONFIG + '\n[review]\nroster = ["r1"]\ncommand = "python review.py"\n'
    assert contract_refusals(CONFIG, review) == ["review: [review] changed"]
    assert proposal_refusals(CONFIG, review) == []
    assert proposal_refusals(CONFIG, edited) == contract_refusals(CONFIG, edited)


def test_a_pending_list_written_on_one_line_is_rewritten_one_entry_per_line() -> None:
    changes = ContractChanges(
        criteria=(NewCriterion(test="tests/test_a.py::test_a", text="def test_a():\n    pass\n"),)
    )
    text = new_config(CONFIG, changes)
    lines = ["    " + f'"{t}",' for t in ("tests/test_old.py::test_old", "tests/test_a.py::test_a")]
    assert "pending = [\n" + "\n".join(lines) + "\n]" in text
    no_pending = CONFIG.replace('pending = ["tests/test_old.py::test_old"]\n', "")
    assert 'pending = [\n    "tests/test_a.py::test_a",\n]' in new_config(no_pending, changes)


def test_a_contract_criterion_file_is_frozen_for_every_unit_of_the_plan() -> None:
    """The contract's criteria are claimed by the plan's units (UnitPlanned carries them),
    and the scope guard freezes every planned criterion's file: a unit cannot edit the
    criterion that judges it, nor another's."""
    found = breaches(
        ["tests/test_calc.py", "calc.py"],
        files=["calc.py", "tests/"],
        own_criteria=["tests/test_calc.py::test_add"],
        all_criteria=["tests/test_calc.py::test_add"],
        frozen_globs=[],
        read=lambda side, path: None,
    )
    assert [(b.path, b.kind) for b in found] == [("tests/test_calc.py", "frozen")]


def test_plan_check_with_repo_names_a_reused_check(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "loopbus.toml").write_text(CONFIG.replace('"tests/test_old.py::test_old"', ""))
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.replace('id = "compiles"', 'id = "tests"'))
    run = subprocess.run(
        [sys.executable, "-m", "loopbus.cli", "plan", "check", str(plan), "--repo", str(repo)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1, run.stderr
    assert "contract.checks[0].id='tests' is a check trunk has already" in run.stderr
    assert "Traceback" not in run.stderr
    plan.write_text(PLAN)
    ok = subprocess.run(
        [sys.executable, "-m", "loopbus.cli", "plan", "check", str(plan), "--repo", str(repo)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr


def test_only_the_systems_contract_landed_releases_a_slice() -> None:
    """A forged ``contract.landed`` (any role but system) is skipped by the fold: the slice
    stays held; the merger's releases it; a plan without a contract is never held."""
    from projections import contract_landing
    from schemas.contract import ContractLanded
    from schemas.slices import SlicePlanAccepted

    system = Actor(role="system", principal="dispatcher")
    accepted = SlicePlanAccepted(project="p", actor=system, plan=parse_plan_text(PLAN), cause="c")

    def landed(actor: Actor) -> ContractLanded:
        return ContractLanded(
            project="p", actor=actor, slice="S1", commit="a" * 40, tree="b" * 40,
            previous="c" * 40, accepted=accepted.id, config="d",
        )  # fmt: skip

    forged = landed(Actor(role="builder", principal="b1"))
    state = contract_landing.FOLD.fold([accepted, forged])
    assert contract_landing.held(state, "S1")
    assert contract_landing.to_land(state) is not None
    state = contract_landing.FOLD.fold([landed(system)], state)
    assert not contract_landing.held(state, "S1") and contract_landing.to_land(state) is None
    plain = msgspec.structs.replace(accepted, plan=SlicePlan(slice="S9", units=[]))
    assert not contract_landing.held(contract_landing.FOLD.fold([plain]), "S9")


def test_a_criterion_may_not_rebind_a_name_its_test_file_defines() -> None:
    # Appended after the file's code, a rebinding would replace the file's own test_sub
    # (or its imports) for every test in the file.
    plan = parse_plan_text(PLAN.replace("from calc import add", "from calc import add as test_sub"))
    trunk = "from calc import add\n\n\ndef test_sub():\n    assert add(1, -1) == 0\n"
    problems = contract_plan.repository_problems(plan, [], _reader({"tests/test_calc.py": trunk}))
    assert problems == [
        "contract.criteria[0].test='tests/test_calc.py::test_add': its text binds test_sub, "
        "which tests/test_calc.py already defines; a contract adds names, it never rebinds "
        "one; rename it or import it exactly as the file does"
    ]
    # the very same import may repeat
    same = contract_plan.repository_problems(
        parse_plan_text(PLAN), [], _reader({"tests/test_calc.py": trunk})
    )
    assert same == []
    other = contract_plan.repository_problems(
        parse_plan_text(PLAN),
        [],
        _reader({"tests/test_calc.py": "add = 1\n\ndef test_x():\n    pass\n"}),
    )
    assert len(other) == 1 and "its text binds add" in other[0]


def test_a_reviewers_finding_carrying_refusal_evidence_changes_nothing() -> None:
    """The system re-raises a reviewer's findings with the reviewer's own class and
    evidence: one naming a slice's contract acceptance, or an operator's configuration
    proposal, neither refuses that contract nor cancels that proposal; the merger's own
    refusal does."""
    from projections import contract_landing
    from schemas import FindingRaised
    from schemas.contract import ConfigProposal
    from schemas.slices import SlicePlanAccepted
    from schemas.targets import PlanTarget

    system = Actor(role="system", principal="dispatcher")
    accepted = SlicePlanAccepted(project="p", actor=system, plan=parse_plan_text(PLAN), cause="c")
    proposal = ConfigProposal(
        project="p", actor=Actor(role="operator", principal="op"), text="x", why="w"
    )

    def finding(producer: str) -> FindingRaised:
        return FindingRaised(
            project="p", actor=system, producer=producer, target=PlanTarget(slice="S1"),
            severity="high", criterion="c", cls="refused-transition", message="m",
            evidence={"contract_accepted": accepted.id, "config_claim": proposal.id},
        )  # fmt: skip

    state = contract_landing.FOLD.fold([accepted, proposal, finding("reviewer")])
    assert state.slices["S1"].refused is None and state.proposals[proposal.id].refused is None
    state = contract_landing.FOLD.fold([finding("trunk_gate")], state)
    assert state.slices["S1"].refused is not None
    assert state.proposals[proposal.id].refused is not None
