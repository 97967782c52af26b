"""What the operator page shows, as JSON documents built from the projection states.

Pure: every function takes the states the page holds (the same folds ``status`` reads) and
returns plain data; the server only serialises it. Every list that grows with the project
(units, findings, convergence, the run record, waits) is returned one page at a time with
its total, so a project of 10,000 units and 100,000 findings costs the browser one page.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from loopbus.charter_render import render_charter
from loopbus.lease_render import render_leases
from loopbus.planner_render import planner_doc, planner_lines
from loopbus.units_status import waiting
from projections import budgets as budgets_fold
from projections import findings as findings_fold
from projections import risk, slice_dispatch, to_builtins
from projections import slices as slices_fold
from projections.charter import RunView
from projections.convergence import ConvergenceState
from projections.leases import LeasesState, holders
from projections.merges import MergesState
from projections.planner import PlannerState
from projections.units import UnitsState

UNSLICED = "(no accepted plan)"
"""The slice heading of units whose slice has no accepted plan yet (no waves to show)."""
FILTERS = ("unit", "producer", "severity", "class")
"""Finding fields the page filters on (``project`` is which project the page shows)."""
SEVERITY_ORDER = {"critical": 0, "high": 1, "medium": 2, "low": 3, "info": 4}


@dataclass(frozen=True)
class Page:
    """Which slice of a list to return."""

    offset: int = 0
    limit: int = 50

    def cut(self, items: list[Any]) -> dict[str, Any]:
        return {
            "total": len(items),
            "offset": self.offset,
            "limit": self.limit,
            "items": items[self.offset : self.offset + self.limit],
        }


def unit_state(units: UnitsState, unit: slices_fold.SliceUnit | None, unit_id: str) -> str:
    """The colour a unit gets: its state in the units fold (the one that moves it), else as
    the slice saw it, ``dispatched`` between a dispatch and its first transition."""
    view = units.units.get(unit_id)
    if view is not None and view.state is not None:
        return view.state
    if unit is not None and unit.state is not None:
        return unit.state
    return "dispatched" if unit is not None and unit.dispatches else "planned"


def slices_doc(
    states: Mapping[str, Any], page: Page, unit_limit: int, now: datetime
) -> dict[str, Any]:
    """Each slice with its waves (a wave is a list of sub-waves of units), one page of slices."""
    slices: slices_fold.SlicesState = states["slices"]
    units: UnitsState = states["units"]
    out: list[dict[str, Any]] = []
    for view in sorted(slices.slices.values(), key=lambda v: v.rank):
        out.append(_slice(view, units, unit_limit))
    loose: dict[str, list[str]] = {}
    for unit_id, unit_view in units.units.items():
        if unit_view.slice not in slices.slices:
            loose.setdefault(unit_view.slice or UNSLICED, []).append(unit_id)
    for slice_id in sorted(loose):
        ids = loose[slice_id]
        out.append(
            {
                "slice": slice_id,
                "status": "unplanned",
                "where": "no accepted plan: units shown in the order they were planned",
                "units_total": len(ids),
                "waves": [[[_unit(units, None, u, "") for u in ids[:unit_limit]]]],
            }
        )
    return page.cut(out)


def _slice(view: slices_fold.SliceView, units: UnitsState, unit_limit: int) -> dict[str, Any]:
    group = slice_dispatch.current_group(view)
    if view.status == "closed":
        where = f"closed, boot {view.boot.outcome}" if view.boot else "closed"
    elif view.status == "discarded":
        where = "discarded (re-sliced)"
    elif group is None:
        where = "every unit settled; booting the increment"
    else:
        where = f"current wave {group[0]}.{group[1]}"
    waits = slice_dispatch.waiting_on(view)
    budget = unit_limit
    waves: list[list[list[dict[str, Any]]]] = []
    for wave in view.waves:
        groups: list[list[dict[str, Any]]] = []
        for sub in wave:
            shown = sub[: max(budget, 0)]
            budget -= len(shown)
            groups.append([_unit(units, view.units.get(u), u, waits.get(u, "")) for u in shown])
        waves.append(groups)
    return {
        "slice": view.slice,
        "status": view.status,
        "where": where,
        "current": list(group) if group else None,
        "units_total": len(view.units),
        "waves": waves,
    }


def _unit(
    units: UnitsState, unit: slices_fold.SliceUnit | None, unit_id: str, wait: str
) -> dict[str, Any]:
    view = units.units.get(unit_id)
    title = (view.title if view else "") or (unit.title if unit else "")
    return {
        "unit": unit_id,
        "state": unit_state(units, unit, unit_id),
        "title": title,
        "wait": wait,
    }


def counts_doc(states: Mapping[str, Any]) -> dict[str, Any]:
    units: UnitsState = states["units"]
    findings: findings_fold.FindingsState = states["findings"]
    by_state = Counter(view.state or "planned" for view in units.units.values())
    return {
        "units": len(units.units),
        "by_state": dict(by_state),
        "open_findings": sum(len(scope) for scope in findings.open.values()),
        "resolved_findings": findings.resolved,
    }


def waiting_doc(states: Mapping[str, Any], page: Page, now: datetime) -> dict[str, Any]:
    """Blocked units grouped by what they wait on, longest wait first (``status --waiting``)."""
    groups = waiting(states["units"], now)
    for group in groups:
        group["longest_s"] = max(u["waited_s"] for u in group["units"])
        group["count"] = len(group["units"])
        group["units"] = group["units"][:20]
    return page.cut(groups)


def budgets_doc(states: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every slice's budgets: used against limit, breached or not (``status``'s measures)."""
    budgets: budgets_fold.BudgetsState = states["budgets"]
    out = []
    for slice_id in sorted(budgets.slices):
        use = budgets.slices[slice_id]
        measures = []
        for m in budgets_fold.measures(use):
            row = to_builtins(m)
            row["raised"] = m.budget in use.raised
            measures.append(row)
        out.append({"slice": slice_id, "measures": measures})
    return out


def convergence_doc(states: Mapping[str, Any], page: Page) -> dict[str, Any]:
    """Per unit: rounds closed, the latest verdict, what ended it, the rung and tactic."""
    state: ConvergenceState = states["convergence"]
    rows = []
    for unit, view in state.units.items():
        last = view.rounds[-1] if view.rounds else None
        rows.append(
            {
                "unit": unit,
                "rounds": len(view.rounds),
                "verdict": last.convergence if last else None,
                "action": last.action if last else None,
                "why": last.why if last else "",
                "ended_by": view.ended_by or (last.ended_by if last else None),
                "rung": view.rung,
                "tactic": view.tactic,
                "reviews": view.reviews,
            }
        )
    return page.cut(rows)


def record_doc(states: Mapping[str, Any], page: Page) -> dict[str, Any]:
    """The run record, newest dispatch first: each entry and, once back, how it ended."""
    slices: slices_fold.SlicesState = states["slices"]
    rows = []
    for entry in reversed(slices_fold.record_entries(slices)):
        done = entry.completion
        rows.append(
            {
                "slice": entry.slice,
                "unit": entry.unit,
                "title": entry.title,
                "attempt": entry.attempt,
                "wave": f"{entry.wave}.{entry.sub_wave}",
                "dispatched_at": entry.dispatched_at.isoformat(),
                "ended": done.state if done else None,
                "ended_by": done.ended_by if done else None,
                "summary": done.summary if done else "",
                "commands": [
                    {"command": c.command, "check": c.check, "outcome": c.outcome}
                    for c in (done.commands if done else [])
                ],
                "files_changed": list(done.files_changed) if done else [],
            }
        )
    return page.cut(rows)


def merges_doc(states: Mapping[str, Any], page: Page) -> dict[str, Any]:
    """Trunk's colour (green, red, not checked) and the merge queue in order."""
    state: MergesState = states["merges"]
    trunk = state.trunk
    checked = trunk.checked
    if trunk.commit is None:
        colour, failing = "unknown", []
    elif checked is None or checked.candidate != trunk.commit:
        colour, failing = "unchecked", []
    else:
        colour = "green" if checked.green else "red"
        failing = [f.test for f in checked.failing[:10]]
    queue = []
    for position, entry in enumerate(state.queue, start=1):
        tested = entry.tested
        status = "waiting" if tested is None else f"tested {tested.outcome}"
        queue.append(
            {
                "position": position,
                "unit": entry.unit,
                "head": entry.head[:12],
                "approver": entry.approver,
                "status": "conflicted" if entry.conflicted else status,
            }
        )
    advance = state.last_advance
    in_flight = None
    if advance is not None and not advance.done and advance.reverted is None:
        in_flight = {"unit": advance.unit, "merge": (advance.merge or "")[:12]}
    return {
        "trunk": {
            "commit": (trunk.commit or "")[:12],
            "colour": colour,
            "failing": failing,
            "green_commit": (trunk.green_commit or "")[:12],
        },
        "queue": page.cut(queue),
        "in_flight": in_flight,
        "merged": state.merged,
        "reverted": state.reverted,
        "conflicted": state.conflicted,
    }


def overview(
    states: Mapping[str, Any], pages: Mapping[str, Page], unit_limit: int, now: datetime | None
) -> dict[str, Any]:
    """Everything but the findings list, one page of each list (``pages`` by section)."""
    at = now or datetime.now(UTC)
    plain = Page()
    return {
        "counts": counts_doc(states),
        "slices": slices_doc(states, pages.get("slices", Page(0, 20)), unit_limit, at),
        "waiting": waiting_doc(states, pages.get("waiting", plain), at),
        "budgets": budgets_doc(states),
        "convergence": convergence_doc(states, pages.get("convergence", plain)),
        "record": record_doc(states, pages.get("record", Page(0, 20))),
        "merges": merges_doc(states, pages.get("queue", plain)),
        "charter": charter_doc(states),
        "planner": planner_page_doc(states),
        "leases": leases_doc(states, at),
        "risk": risk_doc(states),
    }


def leases_doc(states: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """Who holds which work item now (``status``'s lines), and how many are live."""
    state: LeasesState = states.get("leases") or LeasesState()
    return {
        "live": sum(len(v) for v in holders(state, now).values()),
        "lines": render_leases(state, now=now),
    }


RISK_SLICES = 5
"""Risk reports on the page: the latest closed slices (``loopbus report risk`` has any)."""


def risk_doc(states: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The risk report of each of the latest closed slices, newest first, least verified
    first within each. The page has no repository, so files are judged by the run record
    alone (``loopbus report risk --repo`` also reads which files each check reads)."""
    views: slices_fold.SlicesState = states["slices"]
    state: risk.RiskState = states.get(risk.FOLD.name) or risk.initial()
    closed = [v for v in views.slices.values() if v.status == "closed"]
    closed.sort(key=lambda v: v.rank, reverse=True)
    return [
        {
            "slice": view.slice,
            "items": [
                {"band": item.band, "title": risk.BAND_TITLES[item.band], "text": item.text}
                for item in risk.report(views, state, view.slice, None)
            ],
        }
        for view in closed[:RISK_SLICES]
    ]


def charter_doc(states: Mapping[str, Any]) -> dict[str, Any]:
    """The charter in force (or awaiting) and how many of its criteria hold on trunk."""
    view: RunView = states.get("charter") or RunView()
    total = len(view.charter.criteria) if view.charter is not None else 0
    held = len(set(view.charter.criterion_ids) & view.held) if view.charter is not None else 0
    return {
        "state": view.state,
        "held": held,
        "total": total,
        "trunk": view.criteria_trunk,
        "lines": render_charter(view),
    }


def planner_page_doc(states: Mapping[str, Any]) -> dict[str, Any]:
    """Where planning stands for the running charter, with ``status``'s lines."""
    doc = planner_doc(states.get("planner") or PlannerState())
    doc["lines"] = planner_lines(doc)[1:]  # the page titles the box itself
    return doc


# -- findings ---------------------------------------------------------------------------


def finding_row(finding: findings_fold.OpenFinding) -> dict[str, Any]:
    return {
        "id": finding.id,
        "unit": finding.unit or "",
        "slice": finding.slice or "",
        "producer": finding.producer,
        "severity": finding.severity,
        "class": finding.cls,
        "target": finding.target,
        "criterion": finding.criterion,
        "message": finding.message,
        "times": finding.times,
        "raised_at": finding.raised_at.isoformat(),
    }


def matches(finding: findings_fold.OpenFinding, wanted: Mapping[str, str]) -> bool:
    """Whether an open finding passes the filters (an empty filter passes everything)."""
    fields = {
        "unit": finding.unit or "",
        "producer": finding.producer,
        "severity": finding.severity,
        "class": finding.cls,
    }
    return all(not value or fields[name] == value for name, value in wanted.items())


def findings_doc(
    states: Mapping[str, Any], wanted: Mapping[str, str], page: Page
) -> dict[str, Any]:
    """One page of the open findings passing ``wanted``, most severe then newest first,
    with the values each filter can take (so the page offers only real choices)."""
    state: findings_fold.FindingsState = states["findings"]
    unit = wanted.get("unit") or None
    scopes: Iterable[dict[str, findings_fold.OpenFinding]] = (
        [state.open.get(unit, {})] if unit else state.open.values()
    )
    chosen = [f for scope in scopes for f in scope.values() if matches(f, wanted)]
    # Most severe first; within a severity, the most recently raised first.
    chosen.sort(key=lambda f: f.last_raised_at, reverse=True)
    chosen.sort(key=lambda f: SEVERITY_ORDER.get(f.severity, len(SEVERITY_ORDER)))
    facets: dict[str, set[str]] = {"producer": set(), "severity": set(), "class": set()}
    open_count = 0
    for scope in state.open.values():
        open_count += len(scope)
        for f in scope.values():
            facets["producer"].add(f.producer)
            facets["severity"].add(f.severity)
            facets["class"].add(f.cls)
    document = page.cut(chosen)
    document["items"] = [finding_row(f) for f in document["items"]]
    document["open"] = open_count
    document["facets"] = {
        "producer": sorted(facets["producer"]),
        "severity": sorted(facets["severity"], key=lambda s: SEVERITY_ORDER.get(s, 9)),
        "class": sorted(facets["class"]),
    }
    return document


def find_open(states: Mapping[str, Any], finding_id: str) -> findings_fold.OpenFinding | None:
    state: findings_fold.FindingsState = states["findings"]
    for scope in state.open.values():
        for finding in scope.values():
            if finding.id == finding_id:
                return finding
    return None
