"""Generated merges: entity-disjoint edits always merge cleanly into a predicted file."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

import pytest
from entity_merge_cases import LANGS, Lang
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workers.entity_merge import merge_file

# What each side does to one base function. Only one side touches a function, except
# "both-apart", where ours edits its first line and theirs its third.
OPS = ("keep", "ours-edit", "theirs-edit", "ours-delete", "theirs-delete", "both-apart")
BODY = 4


@dataclass(frozen=True)
class Plan:
    """Per-function ops plus where each side inserts new functions (anchor -> count)."""

    ops: tuple[str, ...]
    ours_adds: tuple[int, ...]
    theirs_adds: tuple[int, ...]


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    count = draw(st.integers(min_value=2, max_value=6))
    ops = tuple(draw(st.sampled_from(OPS)) for _ in range(count))
    anchors = st.lists(st.integers(min_value=0, max_value=count), max_size=3)
    return Plan(ops, tuple(sorted(draw(anchors))), tuple(sorted(draw(anchors))))


def _body(seed: int, edits: dict[int, str]) -> list[str]:
    lines = [f"x = x + {seed * 10 + k}" for k in range(BODY - 1)] + ["return x"]
    for line, marker in edits.items():
        lines[line] = lines[line].replace("x + ", f"x * {marker} + ")
    return lines


def _render(lang: Lang, blocks: list[str]) -> bytes:
    return (lang.imports(["os"]) + "".join(lang.separator + b for b in blocks)).encode()


def _side(lang: Lang, plan: Plan, side: str) -> bytes:
    adds = plan.ours_adds if side == "ours" else plan.theirs_adds
    blocks: list[str] = []
    for anchor in range(len(plan.ops) + 1):
        blocks += [
            lang.function(f"{side}_new_{anchor}_{n}", _body(90, {}))
            for n in range(adds.count(anchor))
        ]
        if anchor == len(plan.ops):
            break
        op = plan.ops[anchor]
        if op == f"{side}-delete":
            continue
        edits: dict[int, str] = {}
        if op == f"{side}-edit":
            edits[1] = "2"
        if op == "both-apart":
            edits[0 if side == "ours" else 2] = "3"
        blocks.append(lang.function(f"f{anchor}", _body(anchor, edits)))
    return _render(lang, blocks)


def _expected(lang: Lang, plan: Plan) -> set[bytes]:
    """Every file the merge may give: each addition between its nearest surviving base
    neighbours, each side's additions in that side's order. Where two sides added between
    the same neighbours, which goes first is a choice the base cannot settle (a side that
    deleted a function leaves no trace of whether its addition stood above or below it),
    so every interleaving of the two sides' additions there is accepted."""
    groups: list[tuple[list[str], list[str]]] = [([], [])]
    survivors: list[str] = []
    for anchor in range(len(plan.ops) + 1):
        ours, theirs = groups[-1]
        ours += [
            lang.function(f"ours_new_{anchor}_{n}", _body(90, {}))
            for n in range(plan.ours_adds.count(anchor))
        ]
        theirs += [
            lang.function(f"theirs_new_{anchor}_{n}", _body(90, {}))
            for n in range(plan.theirs_adds.count(anchor))
        ]
        if anchor == len(plan.ops):
            break
        op = plan.ops[anchor]
        if op.endswith("-delete"):
            continue
        edits = {"ours-edit": {1: "2"}, "theirs-edit": {1: "2"}, "both-apart": {0: "3", 2: "3"}}
        survivors.append(lang.function(f"f{anchor}", _body(anchor, edits.get(op, {}))))
        groups.append(([], []))
    files: set[bytes] = set()
    for choice in product(*(_interleavings(ours, theirs) for ours, theirs in groups)):
        blocks = list(choice[0])
        for survivor, group in zip(survivors, choice[1:], strict=True):
            blocks += [survivor, *group]
        files.add(_render(lang, blocks))
    return files


def _interleavings(ours: list[str], theirs: list[str]) -> list[tuple[str, ...]]:
    """Every merge of two lists that keeps each list's own order."""
    if not ours or not theirs:
        return [tuple(ours + theirs)]
    return [(ours[0], *rest) for rest in _interleavings(ours[1:], theirs)] + [
        (theirs[0], *rest) for rest in _interleavings(ours, theirs[1:])
    ]


@pytest.mark.parametrize("lang", [pytest.param(lang, id=lang.name) for lang in LANGS])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=plans())
def test_edits_to_different_entities_always_merge_to_the_predicted_file(
    lang: Lang, plan: Plan
) -> None:
    """Any mix of edits, deletions and insertions on disjoint functions merges cleanly."""
    base = _render(lang, [lang.function(f"f{i}", _body(i, {})) for i in range(len(plan.ops))])
    result = merge_file(base, _side(lang, plan, "ours"), _side(lang, plan, "theirs"), lang.path)
    assert result.clean, result.conflicts
    expected = _expected(lang, plan)
    assert result.content in expected, (result.content.decode(), len(expected))
