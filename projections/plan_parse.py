"""Reading plan text into a :class:`schemas.slices.SlicePlan`, pure.

A plan is TOML (``[slice]``, ``[[unit]]``, ``[contract]``) or the same document as JSON.
Every problem is collected, one line each naming the field, the value and the fix, and
raised together as :class:`projections.errors.PlanInvalid`, so one round of fixes is
enough; a plan whose shape is wrong also gets its dependency graph's problems when the
graph is readable. Validating a parsed plan against the repository is
:func:`projections.planning.validate`.
"""

import json
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

from projections.contract_plan import parse_contract
from projections.errors import PlanInvalid
from projections.planning import graph_problems, validate
from schemas.durations import parse_duration
from schemas.errors import InvalidValue
from schemas.ids import is_token
from schemas.slices import BUDGET_NAMES, PlannedUnit, SliceBudgets, SlicePlan
from schemas.targets import inside_repository

_SLICE_KEYS = ("id", "capabilities", "budgets", "skeleton")
_UNIT_KEYS = ("id", "title", "files", "blocked_by", "criteria", "design_ref")


def parse_plan(text: str, fmt: str = "toml") -> SlicePlan:
    """Read plan text (``toml`` or ``json``) into a :class:`SlicePlan`.

    Raises :class:`PlanInvalid` with one line per problem, each naming the field.
    """
    try:
        doc: Any = tomllib.loads(text) if fmt == "toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise PlanInvalid([f"not valid {fmt.upper()}: {exc}"]) from exc
    if not isinstance(doc, dict):
        raise PlanInvalid([f"a plan is a {fmt.upper()} table with [slice] and [[unit]]"])
    problems: list[str] = []
    plan = _plan_from(doc, problems)
    if problems or plan is None:
        raise PlanInvalid(problems)
    return plan


def parse_plan_text(text: str, name: str = "plan.toml") -> SlicePlan:
    """Parse plan text named ``name`` (its extension picks the format) and validate it
    without a repository; raise :class:`PlanInvalid` listing every problem."""
    plan = parse_plan(text, plan_format(name))
    problems = validate(plan)
    if problems:
        raise PlanInvalid(problems)
    return plan


def plan_format(name: str) -> str:
    """``json`` for a ``.json`` file name, else ``toml``."""
    return "json" if name.lower().endswith(".json") else "toml"


def _plan_from(doc: dict[str, Any], problems: list[str]) -> SlicePlan | None:
    _unknown(doc, ("slice", "unit", "units", "budgets", "contract"), "plan", problems)
    head = doc.get("slice")
    if not isinstance(head, dict):
        problems.append('slice: missing; add a [slice] table with id = "S1"')
        head = {}
    _unknown(head, _SLICE_KEYS, "slice", problems)
    slice_id = head.get("id")
    if not isinstance(slice_id, str) or not is_token(slice_id):
        problems.append(f"slice.id={slice_id!r} is not valid: use 1-64 letters, digits, '-' or '_'")
    capabilities = _strings(head.get("capabilities", []), "slice.capabilities", problems)
    raw_budgets = head.get("budgets", doc.get("budgets", {}))
    budgets = _budgets(raw_budgets, problems)
    is_skeleton = head.get("skeleton", False)
    if not isinstance(is_skeleton, bool):
        problems.append(f"slice.skeleton={is_skeleton!r} must be true or false")
    raw_units = doc.get("unit", doc.get("units"))
    if not isinstance(raw_units, list) or not raw_units:
        problems.append('unit: a plan needs at least one [[unit]] with id = "U1"')
        raw_units = []
    units = [u for i, raw in enumerate(raw_units) if (u := _unit(raw, i, problems)) is not None]
    contract = parse_contract(doc.get("contract"), problems)
    if problems:
        # The shape is wrong, but the dependency graph may still be readable: list its
        # problems too, so one round of fixes is enough.
        skeleton, every_id = _skeleton(raw_units)
        problems.extend(graph_problems(skeleton, resolve=every_id))
        return None
    return SlicePlan(
        slice=str(slice_id),
        capabilities=capabilities,
        budgets=budgets,
        units=units,
        contract=contract,
        skeleton=is_skeleton is True,
    )


def _skeleton(raw_units: list[Any]) -> tuple[list[PlannedUnit], bool]:
    """Each unit entry's id and well-formed ``blocked_by`` ids, whatever else is wrong with
    it, and whether every entry had a valid id (only then can a blocker be called
    unresolved: it may name an entry whose id did not read)."""
    units: list[PlannedUnit] = []
    every_id = True
    for raw in raw_units:
        unit_id = raw.get("id") if isinstance(raw, dict) else None
        if not isinstance(unit_id, str) or not is_token(unit_id):
            every_id = False
            continue
        blocked = raw.get("blocked_by", [])
        blockers = [b for b in blocked if isinstance(b, str) and is_token(b)]
        units.append(
            PlannedUnit(id=unit_id, blocked_by=blockers if isinstance(blocked, list) else [])
        )
    return units, every_id


def _unit(raw: Any, index: int, problems: list[str]) -> PlannedUnit | None:
    where = f"unit[{index}]"
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a table with id, title, files, blocked_by, criteria")
        return None
    unit_id = raw.get("id")
    if not isinstance(unit_id, str) or not is_token(unit_id):
        problems.append(
            f"{where}.id={unit_id!r} is not valid: use 1-64 letters, digits, '-' or '_'"
        )
        return None
    where = f"unit {unit_id}"
    before = len(problems)
    _unknown(raw, _UNIT_KEYS, where, problems)
    title = raw.get("title", "")
    if not isinstance(title, str):
        problems.append(f"{where}: title={title!r} must be a string")
    files = [
        _path(f, where, problems)
        for f in _strings(raw.get("files", []), f"{where}: files", problems)
    ]
    blocked_by = _strings(raw.get("blocked_by", []), f"{where}: blocked_by", problems)
    for blocker in blocked_by:
        if not is_token(blocker):
            problems.append(f"{where}: blocked_by {blocker!r} is not a unit id")
    criteria = _strings(raw.get("criteria", []), f"{where}: criteria", problems)
    design_ref = raw.get("design_ref")
    if design_ref is not None and not isinstance(design_ref, str):
        problems.append(f"{where}: design_ref={design_ref!r} must be a path string")
    if len(problems) > before:
        return None
    return PlannedUnit(
        id=unit_id,
        title=str(title),
        files=files,
        blocked_by=blocked_by,
        criteria=criteria,
        design_ref=design_ref or None,
    )


def _budgets(raw: Any, problems: list[str]) -> SliceBudgets:
    if not isinstance(raw, dict):
        problems.append("slice.budgets: expected a table such as [slice.budgets]")
        return SliceBudgets()
    _unknown(raw, BUDGET_NAMES, "slice.budgets", problems)
    values: dict[str, Any] = {}
    for key, field in (("gate_wall_clock", "gate_wall_clock_s"), ("wait", "wait_s")):
        if key in raw:
            value = raw[key]
            try:
                values[field] = (
                    float(value)
                    if isinstance(value, int | float) and not isinstance(value, bool)
                    else parse_duration(str(value), f"slice.budgets.{key}")
                )
            except InvalidValue as exc:
                problems.append(str(exc))
    for key in ("tokens_per_unit", "rework_rounds"):
        if key in raw:
            value = raw[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                problems.append(f"slice.budgets.{key}={value!r} is not valid: a whole number >= 0")
            else:
                values[key] = value
    if "cache_hit_rate" in raw:
        value = raw["cache_hit_rate"]
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            problems.append(
                f"slice.budgets.cache_hit_rate={value!r} is not valid: a fraction in 0..1"
            )
        else:
            values["cache_hit_rate"] = float(value)
    return SliceBudgets(**values)


def _unknown(
    table: Mapping[str, Any], known: Sequence[str], where: str, problems: list[str]
) -> None:
    for key in table:
        if key not in known:
            problems.append(f"{where}: unknown field {key!r}; known fields: {', '.join(known)}")


def _strings(value: Any, where: str, problems: list[str]) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(f"{where}={value!r} must be a list of strings")
        return []
    return list(value)


def _path(path: str, where: str, problems: list[str]) -> str:
    cleaned = inside_repository(path)
    if cleaned is None:
        problems.append(f"{where}: files entry {path!r} must be a path inside the repository")
        return path.strip()
    return cleaned
