"""Reading a charter file: TOML, or Markdown with TOML front matter between ``+++`` lines.

The Markdown body (what follows the closing ``+++``) becomes ``Charter.text``: the
operator's own words, kept with the charter for the planner to read. Every mistake is one
line naming the file, the field, the value found and the fix (a :class:`UsageError`).
"""

from __future__ import annotations

import tomllib
from typing import Any

import msgspec

from loopbus.errors import UsageError
from schemas.charter import (
    AUTONOMIES,
    DEFAULT_WALL_CLOCK,
    LONG_WALL_CLOCK,
    Charter,
    CharterCriterion,
    Objective,
    RunBudgets,
)
from schemas.criterion_source import source_problem
from schemas.errors import InvalidValue
from schemas.ids import is_token

FENCE = "+++"
TOP_KEYS = ("id", "title", "objectives", "criteria", "budgets", "autonomy")
OBJECTIVE_KEYS = ("id", "text")
CRITERION_KEYS = ("id", "text", "check", "test", "source")
BUDGET_KEYS = ("wall_clock", "tokens", "slices", "long")


def split_front_matter(text: str, source: str = "charter") -> tuple[str, str]:
    """(TOML, Markdown body): the whole text is TOML unless it opens with a ``+++`` line."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != FENCE:
        return text, ""
    for index in range(1, len(lines)):
        if lines[index].strip() == FENCE:
            return "".join(lines[1:index]), "".join(lines[index + 1 :]).strip("\n")
    raise UsageError(
        f"{source}: front matter = '+++': no closing '+++' line; end the TOML header with one"
    )


def parse_charter(text: str, source: str = "charter") -> Charter:
    """The :class:`Charter` ``text`` describes, or one :class:`UsageError` line."""
    toml_text, body = split_front_matter(text, source)
    try:
        doc = tomllib.loads(toml_text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{source}: not valid TOML: {exc}") from exc

    def bad(field: str, value: Any, fix: str) -> UsageError:
        shown = repr(value)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        return UsageError(f"{source}: {field} = {shown}: {fix}")

    _known(doc, TOP_KEYS, "", bad)
    cid = doc.get("id")
    if not isinstance(cid, str) or not is_token(cid):
        raise bad("id", cid, "give the charter an id of letters, digits, '_' or '-' (max 64)")
    title = doc.get("title")
    if not isinstance(title, str) or not title.strip():
        raise bad("title", title, "give the charter a title (a string)")
    autonomy = doc.get("autonomy", "supervised")
    if autonomy not in AUTONOMIES:
        raise bad("autonomy", autonomy, f"use one of {', '.join(AUTONOMIES)}")

    objectives = tuple(
        Objective(id=one["id"], text=one["text"])
        for one in _tables(doc, "objectives", OBJECTIVE_KEYS, bad)
    )
    criteria: list[CharterCriterion] = []
    for index, one in enumerate(_tables(doc, "criteria", CRITERION_KEYS, bad)):
        check, test = one.get("check", ""), one.get("test", "")
        code = one.get("source", "")
        where = f"criteria[{index}] ({one['id']})"
        for name, value in (("check", check), ("test", test), ("source", code)):
            if not isinstance(value, str):
                raise bad(f"{where}.{name}", value, "a string")
        if bool(check) == bool(test):
            raise bad(
                where,
                {"check": check, "test": test},
                'give exactly one of check = "<a check id in loopbus.toml>" or '
                'test = "<pytest node id, e.g. tests/test_calc.py::test_add>"',
            )
        if test and "::" not in test:
            raise bad(
                f"{where}.test", test, "a pytest node id names file and test: tests/t.py::test_x"
            )
        if code and not test:
            raise bad(f"{where}.source", code, "source is a test criterion's text; drop it here")
        problem = source_problem(code, test) if code else None
        if problem is not None:
            raise bad(
                f"{where}.source",
                code,
                f"{problem}; write the test's whole file as it must be on trunk",
            )
        criteria.append(
            CharterCriterion(id=one["id"], text=one["text"], check=check, test=test, source=code)
        )

    budgets = _budgets(doc.get("budgets", {}), bad)
    try:
        return Charter(
            id=cid,
            title=title,
            objectives=objectives,
            criteria=tuple(criteria),
            budgets=budgets,
            autonomy=autonomy,
            text=body,
        )
    except (InvalidValue, msgspec.ValidationError) as exc:
        field = getattr(exc, "field", "charter")
        raise bad(field, getattr(exc, "value", ""), getattr(exc, "hint", str(exc))) from exc


def _known(table: dict[str, Any], keys: tuple[str, ...], where: str, bad: Any) -> None:
    for key in table:
        if key not in keys:
            raise bad(f"{where}{key}", table[key], f"not a charter field; use {', '.join(keys)}")


def _tables(doc: dict[str, Any], name: str, keys: tuple[str, ...], bad: Any) -> list[Any]:
    found = doc.get(name, [])
    if not isinstance(found, list) or not all(isinstance(t, dict) for t in found):
        raise bad(name, found, f"write each as a [[{name}]] table with {' and '.join(keys[:2])}")
    seen: set[str] = set()
    for index, table in enumerate(found):
        where = f"{name}[{index}]"
        _known(table, keys, f"{where}.", bad)
        one = table.get("id")
        if not isinstance(one, str) or not is_token(one):
            raise bad(f"{where}.id", one, "an id of letters, digits, '_' or '-' (max 64)")
        if one in seen:
            raise bad(f"{where}.id", one, f"each of the {name} has an id of its own")
        seen.add(one)
        text = table.get("text")
        if not isinstance(text, str) or not text.strip():
            raise bad(f"{where}.text", text, "say in words what it is")
    return found


def _budgets(table: Any, bad: Any) -> RunBudgets:
    if not isinstance(table, dict):
        raise bad("budgets", table, "write a [budgets] table")
    _known(table, BUDGET_KEYS, "budgets.", bad)
    long = table.get("long", False)
    if not isinstance(long, bool):
        raise bad("budgets.long", long, "true (an 8h run) or false")
    wall = table.get("wall_clock", LONG_WALL_CLOCK if long else DEFAULT_WALL_CLOCK)
    if "wall_clock" in table and long:
        raise bad("budgets.long", long, "give wall_clock or long = true, not both")
    if not isinstance(wall, str):
        raise bad("budgets.wall_clock", wall, 'a duration string such as "90m" or "2h"')
    counts: dict[str, int] = {}
    for name in ("tokens", "slices"):
        value = table.get(name, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise bad(f"budgets.{name}", value, "a whole number, 0 for no limit")
        counts[name] = value
    try:
        return RunBudgets(wall_clock=wall, tokens=counts["tokens"], slices=counts["slices"])
    except InvalidValue as exc:
        raise bad(exc.field, exc.value, exc.hint) from exc
