"""Slice planning, pure: parse a plan, validate it, and derive its waves and dispatch order.

Nothing here reads files, the clock or the bus: the same plan text always gives the same
plan, the same problems and the same schedule, which is what lets ``loopbus plan check``,
the dispatcher daemon and a replay agree to the unit.

Dependency edges point from a unit to what it is ``blocked_by``. A cycle is named in that
direction, each unit followed by one it is blocked by: ``U3 -> U5 -> U3``.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from projections.contract_plan import contract_problems, parse_contract
from projections.errors import PlanInvalid
from schemas.durations import parse_duration
from schemas.errors import InvalidValue
from schemas.ids import is_token
from schemas.slices import PlannedUnit, SliceBudgets, SlicePlan


class Schedule(msgspec.Struct, kw_only=True):
    """What a valid plan implies for dispatch.

    ``waves[w][s]`` lists the units of sub-wave ``s`` of wave ``w`` in dispatch order;
    ``order`` is every unit in the order it is dispatched (waves, then sub-waves, then the
    dispatch key); ``depth`` is the length of the longest chain of units waiting on each
    unit, ``dependents`` the size of its transitive dependent set.
    """

    order: list[str]
    waves: list[list[list[str]]]
    depth: dict[str, int]
    dependents: dict[str, int]

    def groups(self) -> list[list[str]]:
        """The groups that run together, in order: each sub-wave is its own group."""
        return [group for wave in self.waves for group in wave]

    def position(self) -> dict[str, tuple[int, int, int]]:
        """unit -> (wave, sub-wave, index in ``order``)."""
        index = {unit: i for i, unit in enumerate(self.order)}
        return {
            unit: (w, s, index[unit])
            for w, wave in enumerate(self.waves)
            for s, group in enumerate(wave)
            for unit in group
        }


# -- parsing ------------------------------------------------------------------------------

_SLICE_KEYS = ("id", "capabilities", "budgets", "skeleton")
_UNIT_KEYS = ("id", "title", "files", "blocked_by", "criteria", "design_ref")
_BUDGET_KEYS = ("gate_wall_clock", "tokens_per_unit", "rework_rounds", "cache_hit_rate", "wait")


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
        problems.extend(_graph_problems(skeleton, resolve=every_id))
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
    _unknown(raw, _BUDGET_KEYS, "slice.budgets", problems)
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
    cleaned = path.strip()
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    if not cleaned or cleaned.startswith("/") or ".." in cleaned.split("/"):
        problems.append(f"{where}: files entry {path!r} must be a path inside the repository")
    return cleaned


# -- validation ---------------------------------------------------------------------------


def validate(plan: SlicePlan, pending: Iterable[str] | None = None) -> list[str]:
    """Every reason to refuse ``plan``, one line each; an empty list means it stands.

    ``pending`` is the repository's pending criteria; when ``None`` (no repository to read)
    only double claims are checked, since coverage cannot be.
    """
    problems = _graph_problems(plan.units)
    problems.extend(_criteria_problems(plan, pending))
    problems.extend(contract_problems(plan))
    if not problems:
        problems.extend(_ownership_problems(plan, schedule(plan)))
    return problems


def _graph_problems(units: Sequence[PlannedUnit], *, resolve: bool = True) -> list[str]:
    """Repeated unit ids, ``blocked_by`` ids that name no unit (when ``resolve``), and
    every dependency cycle."""
    problems: list[str] = []
    ids = [unit.id for unit in units]
    seen: set[str] = set()
    for unit_id in ids:
        if unit_id in seen:
            problems.append(f"unit {unit_id} is declared more than once; unit ids must be unique")
        seen.add(unit_id)
    known = set(ids)
    for unit in units if resolve else ():
        for blocker in unit.blocked_by:
            if blocker not in known:
                problems.append(
                    f"unit {unit.id}: blocked_by {blocker} does not resolve to a unit of this plan"
                )
    for cycle in find_cycles(SlicePlan(slice="graph", units=list(units))):
        problems.append(f"dependency cycle: {' -> '.join(cycle)} (each is blocked by the next)")
    return problems


def _criteria_problems(plan: SlicePlan, pending: Iterable[str] | None) -> list[str]:
    problems: list[str] = []
    claims: dict[str, list[str]] = {}
    for unit in plan.units:
        for criterion in dict.fromkeys(unit.criteria):
            claims.setdefault(criterion, []).append(unit.id)
    for criterion, owners in claims.items():
        if len(owners) > 1:
            problems.append(
                f"criterion {criterion} is claimed by more than one unit: {', '.join(owners)}; "
                "exactly one unit must own it"
            )
    if pending is not None:
        for criterion in dict.fromkeys(pending):
            if criterion not in claims:
                problems.append(
                    f"pending criterion {criterion} is claimed by no unit; "
                    "add it to one unit's criteria"
                )
    return problems


def unclaimed_extras(plan: SlicePlan, pending: Iterable[str]) -> list[str]:
    """Criteria units claim that the repository does not declare pending (a warning); the
    plan's own ``[contract]`` criteria are pending once it lands, so they are not named."""
    declared = set(pending)
    if plan.contract is not None:
        declared |= {criterion.test for criterion in plan.contract.criteria}
    return [
        f"unit {unit.id} claims {criterion}, which loopbus.toml does not list as pending"
        for unit in plan.units
        for criterion in unit.criteria
        if criterion not in declared
    ]


def _ownership_problems(plan: SlicePlan, sched: Schedule) -> list[str]:
    problems: list[str] = []
    units = {unit.id: unit for unit in plan.units}
    for w, wave in enumerate(sched.waves):
        members = [unit for group in wave for unit in group]
        if len(members) < 2:
            continue
        for unit_id in members:
            if not units[unit_id].files:
                others = ", ".join(m for m in members if m != unit_id)
                problems.append(
                    f"unit {unit_id} shares wave {w} with {others} but declares no owned "
                    "files; list them in files = [...] so the disjoint-file guard can run"
                )
    return problems


def find_cycles(plan: SlicePlan) -> list[list[str]]:
    """One named cycle per strongly connected knot of ``blocked_by``, in plan order.

    Each cycle starts and ends at the knot's first unit in plan order and is the shortest
    way back to it, so the text is the same on every run.
    """
    order = [unit.id for unit in plan.units]
    known = set(order)
    edges = {
        unit.id: [b for b in dict.fromkeys(unit.blocked_by) if b in known] for unit in plan.units
    }
    cycles: list[list[str]] = []
    for component in _components(order, edges):
        start = min(component, key=order.index)
        if len(component) == 1 and start not in edges[start]:
            continue
        cycles.append(_shortest_cycle(start, edges, component))
    cycles.sort(key=lambda c: order.index(c[0]))
    return cycles


def _components(order: list[str], edges: Mapping[str, list[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components, iteratively (plans can be deep chains)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = 0
    for root in order:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = edges[node]
            if i < len(children):
                work.append((node, i + 1))
                child = children[i]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.add(top)
                    if top == node:
                        break
                found.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def _shortest_cycle(start: str, edges: Mapping[str, list[str]], within: set[str]) -> list[str]:
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for child in edges[node]:
                if child not in within:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{start} is in a knot but has no way back")  # pragma: no cover


# -- scheduling ---------------------------------------------------------------------------


def schedule(plan: SlicePlan) -> Schedule:
    """Waves, disjoint-file sub-waves and the dispatch order of an acyclic, resolved plan.

    Key, highest first: the longest chain of units waiting on a unit, then the size of its
    transitive dependent set, then plan order. Waves are topological levels; within a
    wave, units are placed first-fit in key order into the first sub-wave whose units own
    none of their files, so the unit the most work waits on always starts first.
    """
    order = [unit.id for unit in plan.units]
    units = {unit.id: unit for unit in plan.units}
    blockers = {u.id: [b for b in dict.fromkeys(u.blocked_by) if b in units] for u in plan.units}
    dependents: dict[str, list[str]] = {unit_id: [] for unit_id in order}
    for unit_id in order:
        for blocker in blockers[unit_id]:
            dependents[blocker].append(unit_id)
    topo = _topological(order, blockers, dependents)
    level: dict[str, int] = {}
    for unit_id in topo:
        level[unit_id] = 1 + max((level[b] for b in blockers[unit_id]), default=-1)
    depth: dict[str, int] = {}
    reach: dict[str, set[str]] = {}
    for unit_id in reversed(topo):
        below = dependents[unit_id]
        depth[unit_id] = 1 + max((depth[d] for d in below), default=-1)
        reached: set[str] = set(below)
        for d in below:
            reached |= reach[d]
        reach[unit_id] = reached
    plan_index = {unit_id: i for i, unit_id in enumerate(order)}

    def key(unit_id: str) -> tuple[int, int, int]:
        return (-depth[unit_id], -len(reach[unit_id]), plan_index[unit_id])

    waves: list[list[list[str]]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for unit_id in sorted(order, key=key):
        groups = waves[level[unit_id]]
        files = units[unit_id].files
        for group in groups:
            if not any(files_overlap(files, units[other].files) for other in group):
                group.append(unit_id)
                break
        else:
            groups.append([unit_id])
    return Schedule(
        order=[unit_id for wave in waves for group in wave for unit_id in group],
        waves=waves,
        depth={unit_id: depth[unit_id] for unit_id in order},
        dependents={unit_id: len(reach[unit_id]) for unit_id in order},
    )


def _topological(
    order: list[str], blockers: Mapping[str, list[str]], dependents: Mapping[str, list[str]]
) -> list[str]:
    waiting = {unit_id: len(blockers[unit_id]) for unit_id in order}
    queue = [unit_id for unit_id in order if waiting[unit_id] == 0]
    out: list[str] = []
    while queue:
        unit_id = queue.pop()
        out.append(unit_id)
        for dependent in dependents[unit_id]:
            waiting[dependent] -= 1
            if waiting[dependent] == 0:
                queue.append(dependent)
    if len(out) != len(order):
        raise ValueError("schedule() needs an acyclic plan; validate() names the cycle")
    return out


def files_overlap(a: Iterable[str], b: Iterable[str]) -> bool:
    """True when two owned-file lists share a file (a directory owns what is under it)."""
    return any(_covers(x, y) or _covers(y, x) for x in a for y in b)


def _covers(outer: str, inner: str) -> bool:
    outer = outer.rstrip("/")
    return inner == outer or inner.startswith(outer + "/")
