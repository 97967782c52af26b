"""The charter and its run, as lines: for ``charter show``, ``run`` and ``status``. Pure."""

from __future__ import annotations

from typing import Any

from projections.charter import RunView, criteria_summary
from schemas.charter import Charter
from schemas.durations import parse_duration


def render_charter(state: RunView, sizes: Any = None) -> list[str]:
    """``status``'s block: the charter in force (or awaiting), the run's state, criteria."""
    if state.charter is None and state.awaiting is None:
        return ["charter: none (plans are submitted by hand)"]
    lines = []
    if state.charter is not None:
        lines.append(
            f"charter: {state.charter.id} — {state.charter.title}; run {state.state}, "
            f"{criteria_summary(state)}, {len(state.slices)} slices"
        )
    if state.awaiting is not None:
        lines.append(f"charter awaiting approval: {state.awaiting.id} — {state.awaiting.title}")
    return lines


def charter_lines(charter: Charter, heading: str) -> list[str]:
    """A charter, a few lines: id, title, objectives, criteria, budgets, autonomy."""
    budgets = charter.budgets
    lines = [f"{heading}: {charter.id} — {charter.title} (autonomy {charter.autonomy})"]
    lines += [f"  objective {o.id}: {o.text}" for o in charter.objectives]
    for c in charter.criteria:
        how = f"check {c.check}" if c.check else f"test {c.test}"
        how += " with its source" if c.source else ""
        lines.append(f"  criterion {c.id}: {c.text} [{how}]")
    lines.append(
        f"  budgets: wall clock {budgets.wall_clock}, tokens {budgets.tokens or 'no limit'}, "
        f"slices {budgets.slices or 'no limit'}"
    )
    return lines


def run_lines(view: RunView, now_s: float | None = None) -> list[str]:
    """The run: charter, state, slices, criteria held, budgets spent vs limit.
    ``now_s``: seconds since the run's approval (the caller reads the clock)."""
    lines: list[str] = []
    if view.charter is not None:
        lines += charter_lines(view.charter, "charter in force")
    if view.awaiting is not None:
        lines += charter_lines(view.awaiting, "awaiting approval")
        lines.append(f"  approve it: loopbus approve --charter {view.awaiting.id} --why '...'")
    if view.charter is None and view.awaiting is None:
        return ["no charter: plans are submitted by hand (loopbus charter submit FILE)"]
    state: str = view.state
    if view.ended is not None:
        state += f" ({view.ended}{': ' + view.ended_detail if view.ended_detail else ''})"
    lines.append(f"state: {state}")
    if view.charter is None:
        return lines
    lines.append(f"slices: {len(view.slices)} ({', '.join(view.slices) or 'none yet'})")
    held = sorted(set(view.charter.criterion_ids) & view.held)
    lines.append(
        f"criteria: {criteria_summary(view)}" + (f" — held: {', '.join(held)}" if held else "")
    )
    if view.pinning and view.ended is None:
        lines.append("  pins: reading the criteria not pinned by the approval from git")
    for cid, why in sorted(view.unpinned.items()):
        if cid not in view.criteria_detail:
            lines.append(f"  unpinned {cid}: {why}")
    for cid, why in sorted(view.criteria_detail.items()):
        lines.append(f"  not held {cid}: {why}")
    budgets = view.charter.budgets
    wall = parse_duration(budgets.wall_clock)
    spent = f"{_clock(now_s)} of {budgets.wall_clock}" if now_s is not None else budgets.wall_clock
    lines.append(
        f"spent: wall clock {spent} ({_share(now_s, wall)}), "
        f"tokens {view.tokens} of {budgets.tokens or 'no limit'}, "
        f"slices {len(view.slices)} of {budgets.slices or 'no limit'}"
    )
    return lines


def run_document(project: str, view: RunView, now_s: float | None = None) -> dict[str, Any]:
    """What :func:`run_lines` prints, for ``--json``: the charters whole, the run's state,
    slices, criteria and what it spent (``wall_clock_s``: ``now_s``, null when not read)."""
    import msgspec

    charter = view.charter
    return {
        "project": project,
        "charter": None if charter is None else msgspec.to_builtins(charter),
        "awaiting": None if view.awaiting is None else msgspec.to_builtins(view.awaiting),
        "state": view.state,
        "ended": view.ended,
        "ended_detail": view.ended_detail or None,
        "slices": list(view.slices),
        "criteria": {
            "summary": criteria_summary(view) if charter is not None else None,
            "held": sorted(set(charter.criterion_ids) & view.held) if charter else [],
            "not_held": dict(sorted(view.criteria_detail.items())),
            "unpinned": dict(sorted(view.unpinned.items())),
            "pinning": view.pinning and view.ended is None,
        },
        "spent": {"wall_clock_s": now_s, "tokens": view.tokens, "slices": len(view.slices)},
    }


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    whole = int(max(seconds, 0))
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m{whole % 60:02d}s"


def _share(seconds: float | None, limit: float) -> str:
    return "?" if seconds is None else f"{min(max(seconds, 0) / limit, 9.99):.0%}"
