"""Slice planning, pure: validate a plan and derive its waves and dispatch order (reading
plan text into a plan is :mod:`projections.plan_parse`).

Nothing here reads files, the clock or the bus: the same plan text always gives the same
plan, the same problems and the same schedule, which is what lets ``loopbus plan check``,
the dispatcher daemon and a replay agree to the unit.

Dependency edges point from a unit to what it is ``blocked_by``. A cycle is named in that
direction, each unit followed by one it is blocked by: ``U3 -> U5 -> U3``.
"""

from collections.abc import Iterable, Mapping, Sequence

import msgspec

from projections.contract_plan import contract_problems
from schemas.slices import PlannedUnit, SlicePlan


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


# -- validation ---------------------------------------------------------------------------


def validate(plan: SlicePlan, pending: Iterable[str] | None = None) -> list[str]:
    """Every reason to refuse ``plan``, one line each; an empty list means it stands.

    ``pending`` is the repository's pending criteria; when ``None`` (no repository to read)
    only double claims are checked, since coverage cannot be.
    """
    problems = graph_problems(plan.units)
    problems.extend(_criteria_problems(plan, pending))
    problems.extend(contract_problems(plan))
    if not problems:
        problems.extend(_ownership_problems(plan, schedule(plan)))
    return problems


def graph_problems(units: Sequence[PlannedUnit], *, resolve: bool = True) -> list[str]:
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
