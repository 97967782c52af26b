"""How slices, budgets and the run record look to a person.

``render_slices`` and ``render_budgets`` are the ``loopbus status`` renderers of the
``slices`` and ``budgets`` projections; ``render_record`` prints the run record.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from projections import budgets as budgets_fold
from projections import slice_asks, slice_dispatch
from projections import slices as slices_fold
from projections.planning import Schedule


def _when(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%SZ") if at is not None else "-"


def group_label(wave: int, sub_wave: int, sub_waves: int) -> str:
    return f"wave {wave}.{sub_wave}" if sub_waves > 1 else f"wave {wave}"


def render_schedule(sched: Schedule) -> list[str]:
    """Waves, their disjoint-file sub-waves, and the dispatch order of a plan."""
    lines = []
    for w, wave in enumerate(sched.waves):
        for s, group in enumerate(wave):
            keys = ", ".join(
                f"{u} (chain {sched.depth[u]}, dependents {sched.dependents[u]})" for u in group
            )
            lines.append(f"{group_label(w, s, len(wave))}: {keys}")
    lines.append(f"dispatch order: {' '.join(sched.order)}")
    return lines


def render_slices(
    state: slices_fold.SlicesState, sizes: Mapping[str, int] | None = None
) -> list[str]:
    if not state.slices:
        pending = len(slice_asks.pending_submissions(state))
        return [f"slices: none accepted ({pending} submissions awaiting an answer)"]
    lines = [f"slices: {(sizes or {}).get('slices', len(state.slices))}"]
    for view in sorted(state.slices.values(), key=lambda v: v.rank):
        # status reads a page of units (--limit): the wave and the waits are judged over the
        # whole slice, so with some units unread they are not judged at all.
        read = sum(1 for unit_id in view.order if unit_id in view.units)
        whole = read == len(view.order)
        group = slice_dispatch.current_group(view) if whole else None
        if view.status == "closed" and view.boot is not None:
            where = f"closed {_when(view.closed_at)}, boot {view.boot.outcome}"
        elif view.status == "discarded":
            where = "discarded (re-slice)"
        elif not whole:
            where = f"current wave not known: {read} of {len(view.order)} units read (--limit 0)"
        elif group is None:
            where = "every unit settled; booting the increment"
        else:
            where = f"current {group_label(group[0], group[1], len(view.waves[group[0]]))}"
        routes = f"; misaligned routed: {', '.join(view.routes)}" if view.routes else ""
        lines.append(f"  {view.slice}: {where}{routes}")
        waits = slice_dispatch.waiting_on(view) if whole else {}
        for unit_id in view.order:
            unit = view.units.get(unit_id)
            if unit is None:
                continue  # not among the units read (status shows a page of them)
            state_text = unit.state or ("dispatched" if unit.dispatches else "planned")
            if unit.ended_by and unit.state in ("failed", "lost"):
                state_text += f" ({unit.ended_by})"
            wait = f"; waiting on {waits[unit_id]}" if waits.get(unit_id) else ""
            label = group_label(unit.wave, unit.sub_wave, len(view.waves[unit.wave]))
            lines.append(f"    {unit_id} [{label}] {state_text}{wait}")
    return lines


def _value(budget: str, value: float | None) -> str:
    if value is None:
        return "-"
    if budget == "cache_hit_rate":
        return f"{value:.0%}"
    if budget in ("gate_wall_clock", "wait"):
        return f"{value:.1f}s"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def render_budgets(
    state: budgets_fold.BudgetsState, sizes: Mapping[str, int] | None = None
) -> list[str]:
    if not state.slices:
        return ["budgets: no slice"]
    lines = ["budgets (used / limit):"]
    for slice_id in sorted(state.slices):
        use = state.slices[slice_id]
        lines.append(f"  {slice_id}:")
        for measure in budgets_fold.measures(use):
            limit = _value(measure.budget, measure.limit) if measure.limit is not None else "none"
            sign = ">=" if measure.kind == "floor" else "<="
            mark = ""
            if measure.breached:
                raised = "raised" if measure.budget in use.raised else "not raised yet"
                mark = f"  BREACHED ({raised})"
            lines.append(
                f"    {measure.budget}: {_value(measure.budget, measure.value)} / "
                f"{sign} {limit}  ({measure.detail}){mark}"
            )
    return lines


def render_record(state: slices_fold.SlicesState, slice_id: str | None = None) -> list[str]:
    """The run record: a heading per unit per dispatch, its completion under it once it
    reached the barrier, and each slice's close with its boot result."""
    items: list[tuple[datetime, int, list[str]]] = []
    for n, entry in enumerate(slices_fold.record_entries(state, slice_id)):
        items.append((entry.dispatched_at, n, entry_lines(entry)))
    for view in state.slices.values():
        if slice_id is not None and view.slice != slice_id:
            continue
        if view.boot is not None and view.closed_at is not None:
            boot = view.boot
            lines = [f"## {_when(view.closed_at)} — {view.slice} — increment"]
            at = f" at {boot.commit[:12]}" if boot.commit else ""
            command = f"`{boot.command}`" if boot.command else "boot check"
            code = f", exit {boot.exit_code}" if boot.exit_code is not None else ""
            lines.append(f"- boot: {command}{at} → {boot.outcome}{code}, {boot.duration_s:.1f}s")
            lines.extend(_indented("output", boot.detail))
            items.append((view.closed_at, 1 << 30, lines))
    out: list[str] = []
    for _at, _n, lines in sorted(items, key=lambda item: (item[0], item[1])):
        out.extend([*lines, ""])
    return out


def entry_lines(entry: slices_fold.RecordEntry) -> list[str]:
    head = (
        f"## {_when(entry.dispatched_at)} — {entry.slice} — {entry.unit}"
        + (f" — {entry.title}" if entry.title else "")
        + f" (dispatch {entry.attempt}, wave {entry.wave}.{entry.sub_wave})"
    )
    retried = [f"- {words}" for words in entry.retries]
    done = entry.completion
    if done is None:
        return [head, *retried]  # the stub: dispatched, nothing came back to the barrier
    lines = [head, *retried]
    ended = f"- ended: {done.state}" + (f" ({done.ended_by})" if done.ended_by else "")
    lines.append(ended + (f": {done.summary}" if done.summary else ""))
    if done.returned_nothing:
        lines.append("- returned nothing after its dispatch")
    if done.commands:
        lines.append("- commands:")
        for c in done.commands:
            cached = ", from cache" if c.cached else ""
            # Which commit each ran on: a unit of several rounds lists every round's runs.
            on = f", on {c.commit[:12]}" if c.commit else ""
            tree = f", tree {c.tree[:12]}" if c.tree else ""
            detail = f": {c.detail}" if c.detail else ""
            lines.append(
                f"  - `{c.command}` [{c.check}] → {c.outcome}, {c.duration_s:.1f}s"
                f"{on}{tree}{cached}{detail}"
            )
    else:
        lines.append("- commands: none ran")
    compared = not any(n.what == "files changed" for n in done.not_run)
    changed = ", ".join(done.files_changed) or ("none" if compared else "not compared")
    lines.append(f"- files changed: {changed}")
    if done.not_run:
        lines.append("- not run:")
        lines.extend(f"  - {n.what}: {n.why}" for n in done.not_run)
    return lines


def _indented(label: str, text: str) -> list[str]:
    rows = [row for row in text.splitlines() if row.strip()][-8:]
    return [f"- {label}:"] + [f"    {row}" for row in rows] if rows else []


def record_json(state: slices_fold.SlicesState, slice_id: str | None = None) -> dict[str, Any]:
    import msgspec

    return {
        "entries": [
            msgspec.to_builtins(entry) | {"stub": entry.completion is None}
            for entry in slices_fold.record_entries(state, slice_id)
        ],
        "increments": [
            {"slice": v.slice, "closed_at": v.closed_at, "boot": msgspec.to_builtins(v.boot)}
            for v in sorted(state.slices.values(), key=lambda v: v.rank)
            if v.boot is not None and (slice_id is None or v.slice == slice_id)
        ],
    }
