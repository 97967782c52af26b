"""Slice planning, pure: parsing, refusal reasons, waves, sub-waves and dispatch order."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.errors import PlanInvalid
from projections.plan_parse import parse_plan
from projections.planning import (
    files_overlap,
    find_cycles,
    schedule,
    validate,
)
from schemas.slices import PlannedUnit, SlicePlan


def unit(uid: str, *blocked_by: str, files: list[str] | None = None, **kw: object) -> PlannedUnit:
    return PlannedUnit(
        id=uid,
        blocked_by=list(blocked_by),
        files=[f"src/{uid.lower()}.py"] if files is None else files,
        **kw,  # type: ignore[arg-type]
    )


def chain_versus_fan(b_first: bool = True) -> SlicePlan:
    """C<-A, D<-C, E<-D, F<-E (a chain off A); G..K <- B (a fan off B)."""
    chain = [unit("A"), unit("C", "A"), unit("D", "C"), unit("E", "D"), unit("F", "E")]
    fan = [unit("B")] + [unit(x, "B") for x in "GHIJK"]
    return SlicePlan(slice="S1", units=fan + chain if b_first else chain + fan)


@pytest.mark.parametrize("b_first", [True, False], ids=["B-first-in-plan", "A-first-in-plan"])
def test_chain_beats_fan(b_first: bool) -> None:
    """A (a four-deep chain) is dispatched before B (five leaves), whatever the plan order."""
    sched = schedule(chain_versus_fan(b_first))
    assert validate(chain_versus_fan(b_first)) == []
    assert sched.order.index("A") < sched.order.index("B")
    assert sched.depth["A"] == 4 and sched.dependents["A"] == 4
    assert sched.depth["B"] == 1 and sched.dependents["B"] == 5
    assert sched.groups() == [
        ["A", "B"],
        ["C", "G", "H", "I", "J", "K"],
        ["D"],
        ["E"],
        ["F"],
    ]


def test_dependent_count_breaks_equal_depth_then_plan_order() -> None:
    """Equal chains: the larger dependent set first; equal on both keys: plan order."""
    plan = SlicePlan(
        slice="S",
        units=[
            unit("P"),
            unit("R"),
            unit("Q"),
            unit("T"),
            unit("q1", "Q"),
            unit("q2", "Q"),
            unit("r1", "R"),
            unit("t1", "T"),
        ],
    )
    # depth: P 0, Q/R/T 1; dependents: Q 2, R 1, T 1 -> Q, then R before T (plan order), P
    assert schedule(plan).order[:4] == ["Q", "R", "T", "P"]


@pytest.mark.parametrize(
    ("units", "named"),
    [
        pytest.param(
            [unit("U1"), unit("U3", "U5"), unit("U5", "U3")],
            ["dependency cycle: U3 -> U5 -> U3"],
            id="two-unit-cycle",
        ),
        pytest.param([unit("U7", "U7")], ["dependency cycle: U7 -> U7"], id="self-block"),
        pytest.param(
            [unit("a", "c"), unit("b", "a"), unit("c", "b"), unit("d", "a")],
            ["dependency cycle: a -> c -> b -> a"],
            id="three-unit-cycle",
        ),
    ],
)
def test_cycles_are_refused_by_name(units: list[PlannedUnit], named: list[str]) -> None:
    """A cyclic plan is refused with the cycle spelled out, each unit blocked by the next."""
    problems = validate(SlicePlan(slice="S", units=units))
    assert [p.split(" (")[0] for p in problems if p.startswith("dependency cycle")] == named


def test_two_knots_are_both_named() -> None:
    """Every separate cycle is named, in plan order."""
    plan = SlicePlan(
        slice="S", units=[unit("x", "y"), unit("y", "x"), unit("p", "q"), unit("q", "p")]
    )
    assert find_cycles(plan) == [["x", "y", "x"], ["p", "q", "p"]]


def test_unresolved_blocker_is_refused() -> None:
    """A blocked_by naming no unit of the plan is refused by name."""
    problems = validate(SlicePlan(slice="S", units=[unit("U1"), unit("U2", "U9")]))
    assert problems == ["unit U2: blocked_by U9 does not resolve to a unit of this plan"]


def test_unclaimed_pending_criterion_is_refused_by_name() -> None:
    """Every pending criterion of the repository must be claimed by some unit."""
    plan = SlicePlan(slice="S", units=[unit("U1", criteria=["t::a"])])
    problems = validate(plan, pending=["t::a", "t::b"])
    assert len(problems) == 1 and "pending criterion t::b is claimed by no unit" in problems[0]


def test_doubly_claimed_criterion_is_refused_by_name() -> None:
    """A criterion claimed by two units is refused, naming both, even without a repository."""
    plan = SlicePlan(
        slice="S", units=[unit("U1", criteria=["t::a"]), unit("U2", criteria=["t::a"])]
    )
    problems = validate(plan)
    assert len(problems) == 1
    assert "criterion t::a is claimed by more than one unit: U1, U2" in problems[0]


def test_units_sharing_a_wave_must_declare_files() -> None:
    """A unit that can run beside another without owned files is refused; alone it is fine."""
    shared = SlicePlan(slice="S", units=[unit("U1", files=[]), unit("U2")])
    problems = validate(shared)
    assert problems and "unit U1 shares wave 0 with U2 but declares no owned files" in problems[0]
    alone = SlicePlan(slice="S", units=[unit("U1", files=[]), unit("U2", "U1", files=[])])
    assert validate(alone) == []


def test_overlapping_files_are_serialised_into_sub_waves() -> None:
    """Overlapping owners run in separate sub-waves; the unit more work waits on goes first."""
    plan = SlicePlan(
        slice="S",
        units=[
            unit("leaf", files=["src/app.py"]),
            unit("head", files=["src/app.py", "src/cli.py"]),
            unit("other", files=["docs/x.md"]),
            unit("dir", files=["src/"]),
            unit("tail", "head", files=["src/tail.py"]),
        ],
    )
    sched = schedule(plan)
    assert sched.waves[0] == [["head", "other"], ["leaf"], ["dir"]]
    assert sched.groups() == [["head", "other"], ["leaf"], ["dir"], ["tail"]]
    for wave in sched.waves:
        for group in wave:
            owned = [plan.units[[u.id for u in plan.units].index(g)].files for g in group]
            assert not any(files_overlap(a, b) for i, a in enumerate(owned) for b in owned[i + 1 :])


@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [
        pytest.param(["x.py"], ["x.py"], True, id="same-file"),
        pytest.param(["src/"], ["src/a.py"], True, id="folder-owns-its-files"),
        pytest.param(["src"], ["src/a.py"], True, id="folder-without-slash"),
        pytest.param(["src/a.py"], ["src/ab.py"], False, id="prefix-is-not-a-folder"),
        pytest.param(["a.py"], ["b.py"], False, id="disjoint"),
    ],
)
def test_files_overlap(a: list[str], b: list[str], overlap: bool) -> None:
    """Two owned-file lists overlap on a shared file or a folder holding the other's file."""
    assert files_overlap(a, b) is overlap


TOML_PLAN = """
[slice]
id = "S1"
capabilities = ["cli"]

[slice.budgets]
gate_wall_clock = "2m"
tokens_per_unit = 200000
rework_rounds = 3
cache_hit_rate = 0.5
wait = "30m"

[[unit]]
id = "U1"
title = "parse the input file"
files = ["src/parse.py"]
blocked_by = []
criteria = ["tests/test_criteria.py::test_parses_empty_file"]

[[unit]]
id = "U2"
title = "print the total"
files = ["./src/total.py"]
blocked_by = ["U1"]
criteria = ["tests/test_criteria.py::test_total"]
design_ref = "docs/design/total.md"
"""


def test_toml_and_json_read_to_the_same_plan() -> None:
    """The TOML shape and a JSON document with the same fields give the same plan."""
    plan = parse_plan(TOML_PLAN, "toml")
    assert plan.slice == "S1" and plan.capabilities == ["cli"]
    assert plan.budgets.gate_wall_clock_s == 120 and plan.budgets.wait_s == 1800
    assert plan.units[1].files == ["src/total.py"]
    assert plan.units[1].design_ref == "docs/design/total.md"
    as_json = json.dumps(
        {
            "slice": {
                "id": "S1",
                "capabilities": ["cli"],
                "budgets": {
                    "gate_wall_clock": 120,
                    "tokens_per_unit": 200000,
                    "rework_rounds": 3,
                    "cache_hit_rate": 0.5,
                    "wait": "30m",
                },
            },
            "unit": [msgspec.to_builtins(u) for u in plan.units],
        }
    )
    assert parse_plan(as_json, "json") == plan


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("[[unit]]\nid='U1'\n", "slice: missing", id="no-slice"),
        pytest.param("[slice]\nid='S 1'\n[[unit]]\nid='U1'\n", "slice.id='S 1'", id="bad-id"),
        pytest.param("[slice]\nid='S1'\n", "at least one [[unit]]", id="no-units"),
        pytest.param(
            "[slice]\nid='S1'\n[[unit]]\nid='U1'\nblocked-by=['U0']\n",
            "unit U1: unknown field 'blocked-by'",
            id="typo-field",
        ),
        pytest.param(
            "[slice]\nid='S1'\n[slice.budgets]\ncache_hit_rate=2\n[[unit]]\nid='U1'\n",
            "cache_hit_rate=2 is not valid",
            id="rate-out-of-range",
        ),
        pytest.param(
            "[slice]\nid='S1'\n[[unit]]\nid='U1'\nfiles=['../etc/passwd']\n",
            "must be a path inside the repository",
            id="path-escapes",
        ),
        pytest.param("[slice\n", "not valid TOML", id="not-toml"),
    ],
)
def test_bad_plan_text_names_the_field(text: str, expected: str) -> None:
    """A plan that cannot be read says which field is wrong and how."""
    with pytest.raises(PlanInvalid) as caught:
        parse_plan(text, "toml")
    assert any(expected in problem for problem in caught.value.problems), caught.value.problems


@pytest.mark.parametrize(
    ("text", "expected", "absent"),
    [
        pytest.param(
            "[slice]\nid='S1'\n[[unit]]\nid='U3'\ntitle=3\nblocked_by=['U5']\n"
            "[[unit]]\nid='U5'\nblocked_by=['U3']\n[[unit]]\nid='U6'\nblocked_by=['U9']\n",
            [
                "unit U3: title=3 must be a string",
                "dependency cycle: U3 -> U5 -> U3",
                "unit U6: blocked_by U9 does not resolve",
            ],
            [],
            id="bad-field-cycle-and-unresolved",
        ),
        pytest.param(
            "[slice]\nid='S 1'\n[[unit]]\nid='A'\nblocked_by=['B']\n"
            "[[unit]]\nid='B'\nblocked_by=['A']\n",
            ["slice.id='S 1'", "dependency cycle: A -> B -> A"],
            [],
            id="bad-slice-id-and-cycle",
        ),
        pytest.param(
            "[slice]\nid='S1'\n[[unit]]\nid='U 1'\n[[unit]]\nid='U2'\nblocked_by=['U1']\n",
            ["unit[0].id='U 1'"],
            ["does not resolve"],
            id="unit-without-an-id-leaves-blockers-unjudged",
        ),
    ],
)
def test_shape_problems_come_with_the_graph_problems(
    text: str, expected: list[str], absent: list[str]
) -> None:
    """A plan that fails on its shape still names every cycle and unresolved blocker that can
    be told from the units that did read; a blocker is judged only when every unit has an id."""
    with pytest.raises(PlanInvalid) as caught:
        parse_plan(text, "toml")
    problems = caught.value.problems
    for want in expected:
        assert any(want in problem for problem in problems), problems
    for unwanted in absent:
        assert not any(unwanted in problem for problem in problems), problems
    assert len(problems) == len(expected), problems


# -- determinism ---------------------------------------------------------------------------


@st.composite
def dags(draw: st.DrawFn) -> SlicePlan:
    """A random acyclic plan: each unit may be blocked by earlier ones; files from a small pool
    so that overlaps (and sub-waves) are common."""
    size = draw(st.integers(min_value=1, max_value=14))
    names = [f"U{i}" for i in range(size)]
    order = draw(st.permutations(names))
    pool = [f"f{i}.py" for i in range(6)]
    units = []
    for i, name in enumerate(names):
        blockers = draw(st.lists(st.sampled_from(names[:i]), unique=True)) if i else []
        files = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2, unique=True))
        units.append(PlannedUnit(id=name, blocked_by=blockers, files=files))
    by_name = {u.id: u for u in units}
    return SlicePlan(slice="S", units=[by_name[n] for n in order])


@given(dags())
@settings(max_examples=150, deadline=None)
def test_order_is_a_function_of_the_plan(plan: SlicePlan) -> None:
    """Same plan (also after a round trip through the log's encoding), same schedule; the
    order respects dependencies, waves are topological levels, sub-waves never share a file,
    and inside a group units follow the dispatch key."""
    sched = schedule(plan)
    replayed = msgspec.json.decode(msgspec.json.encode(plan), type=SlicePlan)
    assert schedule(replayed) == sched
    assert schedule(plan) == sched
    assert sorted(sched.order) == sorted(u.id for u in plan.units)
    position = {u: i for i, u in enumerate(sched.order)}
    units = {u.id: u for u in plan.units}
    plan_index = {u.id: i for i, u in enumerate(plan.units)}
    where = sched.position()
    for u in plan.units:
        for b in u.blocked_by:
            assert position[b] < position[u.id]
            assert where[b][0] < where[u.id][0]
        if u.blocked_by:
            assert where[u.id][0] == 1 + max(where[b][0] for b in u.blocked_by)
    for wave in sched.waves:
        for group in wave:
            keys = [(-sched.depth[u], -sched.dependents[u], plan_index[u]) for u in group]
            assert keys == sorted(keys)
            for i, a in enumerate(group):
                for b in group[i + 1 :]:
                    assert not files_overlap(units[a].files, units[b].files)
        firsts = [group[0] for group in wave]
        first_keys = [(-sched.depth[u], -sched.dependents[u], plan_index[u]) for u in firsts]
        assert first_keys == sorted(first_keys)


def test_the_documented_json_plan_is_the_documented_toml_plan() -> None:
    """docs/plans.md shows one plan twice; both forms read to the same units and edges."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "plans.md").read_text()
    toml_block = re.search(r"```toml\n(# plan.toml\n.*?)```", text, re.DOTALL)
    json_block = re.search(r"```json\n(.*?)```", text, re.DOTALL)
    assert toml_block is not None and json_block is not None
    from_toml = parse_plan(toml_block.group(1), "toml")
    from_json = parse_plan(json_block.group(1), "json")

    def shape(p: SlicePlan) -> list[tuple[str, list[str], list[str], list[str]]]:
        return [(u.id, u.files, u.blocked_by, u.criteria) for u in p.units]

    assert shape(from_toml) == shape(from_json)
    assert validate(from_toml) == [] and schedule(from_toml).groups() == [["U1"], ["U2"]]
