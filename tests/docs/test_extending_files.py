"""The file lists of docs/extending.md say where each kind of change goes, and stay true.

"Add a daemon's effect" and "Add a producer kind" each list the files such a change
touches, and no others. These tests read those lists from the page and hold them to the
code: the page and this test name the same files, each file holds what the page says it
holds, and what the page says is written once is defined in no file the page does not name.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from schemas import PRODUCERS
from schemas.authority import FINDING_CLAIMS, PRODUCER_ROLES, SYSTEM_PRODUCERS

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "extending.md"
SOURCES = ("schemas", "projections", "bus", "workers", "loopbus")
BULLET = re.compile(r"^\* `(?P<path>[^`]+)`: `(?P<name>[^`]+)`")


def section(title: str) -> str:
    text = PAGE.read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def listed(title: str) -> dict[str, str]:
    """path -> the registry the bullet names beside it, for every ``* `path`: `name``` bullet
    of the section."""
    found = {}
    for line in section(title).splitlines():
        match = BULLET.match(line)
        if match is not None:
            found[match["path"]] = match["name"]
    return found


def python_sources() -> Iterator[Path]:
    for package in SOURCES:
        yield from sorted((ROOT / package).rglob("*.py"))


def top_level_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def strings(node: ast.AST) -> set[str]:
    """The string constants a tuple, list, set (a ``Literal[...]`` too) or a dict's keys hold."""
    elements: list[ast.expr | None] = []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        elements = list(node.elts)
    elif isinstance(node, ast.Dict):
        elements = list(node.keys)
    return {e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)}


# -- Add a producer kind ---------------------------------------------------------------

PRODUCER_SECTION = "Add a producer kind"


def _producer_literal(path: Path, name: str) -> None:
    [assigned] = [
        node
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    ]
    assert isinstance(assigned.value, ast.Subscript)
    assert strings(assigned.value.slice) == set(PRODUCERS), f"{name} is not the producer list"


def _finding_claims(path: Path, name: str) -> None:
    assert name in top_level_names(path), f"{path.name} defines no {name}"
    claimed = {producer for producer, _ in FINDING_CLAIMS.values()}
    assert set(PRODUCER_ROLES) == claimed  # derived from the table, not written again
    assert set(SYSTEM_PRODUCERS) == set(PRODUCERS) - claimed


def _events_sentence(path: Path, name: str) -> None:
    paragraph = next(p for p in path.read_text().split("\n\n") if p.startswith(name))
    every, _, rest = paragraph.partition(". ")
    named = set(re.findall(r"`([^`]+)`", every))
    system = set(re.findall(r"`([^`]+)`", rest.split(" are system")[0]))
    assert named == set(PRODUCERS), f"{path.name}'s {name} names {sorted(named)}"
    assert system == set(SYSTEM_PRODUCERS), f"{path.name} calls {sorted(system)} the system's"


PRODUCER_CHECKS: dict[str, Callable[[Path, str], None]] = {
    "schemas/findings.py": _producer_literal,
    "schemas/authority.py": _finding_claims,
    "docs/events.md": _events_sentence,
}


def test_the_producer_section_names_the_files_this_test_checks() -> None:
    """The page and this test list the same files (a file added to either is checked)."""
    assert set(listed(PRODUCER_SECTION)) == set(PRODUCER_CHECKS)


@pytest.mark.parametrize("path", sorted(PRODUCER_CHECKS))
def test_each_producer_file_holds_what_the_page_says(path: str) -> None:
    """Each file the section names holds the registry named beside it."""
    name = listed(PRODUCER_SECTION)[path]
    PRODUCER_CHECKS[path](ROOT / path, name)


def test_no_other_file_lists_the_producers() -> None:
    """A collection naming every system producer, or a ``Literal`` of producers with one
    of the system's among them, is a list of producer kinds: only the files the section
    names may hold one. (A role's name is often a producer's too, so a list of roles alone
    is not one.)"""
    named = set(listed(PRODUCER_SECTION))
    elsewhere = set()
    for path in python_sources():
        where = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text(), where)):
            held = strings(node) & set(PRODUCERS)
            literal = (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and node.value.id == "Literal"
                and len(strings(node.slice) & set(PRODUCERS)) >= 2
                and bool(strings(node.slice) & SYSTEM_PRODUCERS)
            )
            if literal or held >= SYSTEM_PRODUCERS:
                elsewhere.add(f"{where}:{node.lineno}")
    outside = sorted(p for p in elsewhere if p.split(":")[0] not in named)
    assert outside == [], "list producers in schemas/findings.py and import them"
    assert elsewhere, "the scan found the Producer list itself (a moved file would pass it)"


# -- Add a daemon's effect -------------------------------------------------------------

EFFECT_SECTION = "Add a daemon's effect"
DAEMON = "<daemon>"


def _effect_daemons() -> list[Path]:
    daemons = sorted(p.parent for p in (ROOT / "workers").glob("*/effects.py"))
    assert len(daemons) >= 10  # the scan found them (a moved folder would pass it)
    return daemons


def _is_effect(node: ast.AST) -> bool:
    """A class whose base is ``Effect``, however it was imported."""
    return isinstance(node, ast.ClassDef) and any(
        (isinstance(b, ast.Name) and b.id == "Effect")
        or (isinstance(b, ast.Attribute) and b.attr == "Effect")
        for b in node.bases
    )


def _effect_classes(path: Path) -> list[str]:
    return [
        node.name
        for node in ast.parse(path.read_text()).body
        if _is_effect(node) and isinstance(node, ast.ClassDef)
    ]


def _union_members(node: ast.expr) -> set[str]:
    if isinstance(node, ast.BinOp):
        return _union_members(node.left) | _union_members(node.right)
    return {node.id} if isinstance(node, ast.Name) else set()


def _camel(folder: str) -> str:
    return "".join(part.title() for part in folder.split("_"))


def _effects_union(folder: Path, name: str) -> None:
    union = name.split(" = ")[0].replace("<Daemon>", _camel(folder.name))
    path = folder / "effects.py"
    [assigned] = [
        node
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == union for t in node.targets)
    ] or [None]
    assert assigned is not None, f"{path.relative_to(ROOT)} defines no {union}"
    assert _union_members(assigned.value) == set(_effect_classes(path)), (
        f"{union} is not exactly the effects {path.name} declares"
    )


def _decide(folder: Path, name: str) -> None:
    path = folder / "decide.py"
    assert path.exists() and name in top_level_names(path), f"{path} defines no {name}"


def _perform_match(folder: Path, name: str) -> None:
    """``perform`` is one ``match`` over the effect (its own, or that of the one method it
    hands the effect to, inside a ``try``): a case per effect, then
    ``case _: assert_never(effect)``."""
    path = folder / "daemon.py"
    methods = {
        node.name: node
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.AsyncFunctionDef)
    }
    perform = methods[name]
    matches = [node for node in ast.walk(perform) if isinstance(node, ast.Match)]
    if not matches:  # perform hands the effect to one method of its own
        called = {
            node.func.attr
            for node in ast.walk(perform)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "self"
        }
        assert len(called) == 1, f"{path.relative_to(ROOT)}: perform calls {sorted(called)}"
        matches = [node for node in ast.walk(methods[called.pop()]) if isinstance(node, ast.Match)]
    assert len(matches) == 1, f"{path.relative_to(ROOT)}: perform is not one match"
    cases = matches[0].cases
    last = cases[-1]
    assert isinstance(last.pattern, ast.MatchAs) and last.pattern.pattern is None
    assert "assert_never(" in ast.unparse(last.body[-1]), f"{path}: the match is not exhaustive"
    handled = {
        node.cls.id if isinstance(node.cls, ast.Name) else ast.unparse(node.cls).split(".")[-1]
        for case in cases
        for node in ast.walk(case.pattern)
        if isinstance(node, ast.MatchClass)
    }
    assert handled == set(_effect_classes(folder / "effects.py")), f"{path}: cases {handled}"


EFFECT_CHECKS: dict[str, Callable[[Path, str], None]] = {
    f"workers/{DAEMON}/effects.py": _effects_union,
    f"workers/{DAEMON}/decide.py": _decide,
    f"workers/{DAEMON}/daemon.py": _perform_match,
}


def test_the_effect_section_names_the_files_this_test_checks() -> None:
    """The page and this test list the same files (a file added to either is checked)."""
    assert set(listed(EFFECT_SECTION)) == set(EFFECT_CHECKS)


@pytest.mark.parametrize("path", sorted(EFFECT_CHECKS))
def test_each_daemon_with_effects_holds_what_the_page_says(path: str) -> None:
    """In every daemon that has effects, each file the section names holds what it says."""
    name = listed(EFFECT_SECTION)[path]
    for folder in _effect_daemons():
        EFFECT_CHECKS[path](folder, name)


def test_effects_are_declared_only_in_a_daemons_effects_module() -> None:
    """No effect is declared outside ``workers/<daemon>/effects.py`` (the base class aside)."""
    elsewhere = []
    for path in python_sources():
        if path.name == "effects.py" and path.parent.parent == ROOT / "workers":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if _is_effect(node) and isinstance(node, ast.ClassDef):
                elsewhere.append(f"{path.relative_to(ROOT)}::{node.name}")
    assert elsewhere == [], "declare a daemon's effects in its effects.py"
