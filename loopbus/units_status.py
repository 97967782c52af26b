"""How ``loopbus status`` shows units: by state, what each BLOCKED unit waits on and for how
long, each LOST unit's last heartbeat, and (``--waiting``) the run's waits by subject.

The projection carries no clock; "how long" is measured here, against ``now``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from loopbus.terminal_text import one_line
from projections import blocking
from projections import units as units_fold
from projections.units import UnitsState, UnitView

STATE_ORDER = ("planned", "working", "blocked", "done", "failed", "lost")


def duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h07m``, ``1d03h``."""
    seconds = int(max(seconds, 0))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def unit_key(unit: str) -> tuple[tuple[int, int | str], ...]:
    """``U2`` before ``U10``: digit runs compare as numbers, the rest as text."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", unit) if p)


def _clock(at: datetime | None) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ") if at else "never"


def unit_detail(view: UnitView, now: datetime) -> str:
    """What matters about one unit in its state, in one line (without its id)."""
    parts = [view.title] if view.title else []
    if view.state == "working":
        if view.ready:
            parts.append("ready")
        if view.head:
            parts.append(f"head {view.head[:12]}")
    elif view.state == "blocked" and view.block is not None:
        held = " (held by the dispatcher)" if view.held else ""
        parts.append(
            f"{view.block.reason} -> {view.block.subject}, waiting "
            f"{duration(units_fold.waited(view, now))}{held}"
        )
    elif view.state == "lost" and view.outcome is not None:
        lapse = f"{view.outcome.lapse_s:g}s" if view.outcome.lapse_s is not None else "?"
        parts.append(f"last heartbeat {_clock(view.outcome.last_heartbeat)}, lapse {lapse}")
    elif view.outcome is not None:
        parts.append(f"{view.outcome.ended_by}: {view.outcome.summary}")
    return ", ".join(parts)


def render_units(
    state: UnitsState, now: datetime | None = None, *, sizes: Mapping[str, int] | None = None
) -> list[str]:
    """Units by state, blocked ones with reason, subject and time waited (``sizes``: how
    many units there are when ``state`` holds only some of them)."""
    at = now or datetime.now(UTC)
    if not state.units:
        lines = ["units: none planned"]
    else:
        lines = [f"units: {(sizes or {}).get('units', len(state.units))}"]
        groups = units_fold.by_state(state)
        for name in STATE_ORDER:
            views = groups.get(name, [])
            if not views:
                continue
            lines.append(f"  {name} ({len(views)})")
            # By id, not as the state happens to hold them: replay folds in log order,
            # status reads KV in key order, and the two should list units alike.
            for view in sorted(views, key=lambda v: unit_key(v.unit)):
                detail = unit_detail(view, at)
                lines.append(f"    {view.unit}" + (f"  {detail}" if detail else ""))
    claims = units_fold.pending_claims(state)
    if claims:
        lines.append(f"  reports awaiting the units daemon: {len(claims)}")
    for slice_id in sorted({v.slice for v in state.units.values() if v.slice}):
        waits = units_fold.time_in_wait(state, slice_id, at)
        if waits:
            text = ", ".join(f"{reason} {duration(s)}" for reason, s in sorted(waits.items()))
            lines.append(f"  time in wait, slice {slice_id}: {text}")
    return lines


def waiting(state: UnitsState, now: datetime | None = None) -> list[dict[str, Any]]:
    """What the run is waiting on: one entry per ``(reason, subject)``, longest wait first."""
    at = now or datetime.now(UTC)
    groups = []
    for key, views in units_fold.waiting_on(state).items():
        reason, _, subject = key.partition(":")
        entries = [
            {
                "unit": v.unit,
                "slice": v.slice,
                "waited_s": round(units_fold.waited(v, at), 3),
                "held": v.held,
            }
            for v in sorted(views, key=lambda v: -units_fold.waited(v, at))
        ]
        groups.append({"reason": reason, "subject": subject, "units": entries})
    groups.sort(key=lambda g: -max(u["waited_s"] for u in g["units"]))
    return groups


def awaiting_approval(state: UnitsState) -> list[str]:
    """Units that are ready (their contract holds on their head) and wait only for an
    approval: a reviewer's accepted verdict, or an operator's ``loopbus approve``."""
    return sorted(u for u, v in state.units.items() if v.state == "working" and v.ready)


def render_waiting(state: UnitsState, now: datetime | None = None) -> list[str]:
    """``--waiting``: blocked units grouped by the subject they wait on, then the ready
    units that wait for an approval (a unit that is not blocked may still be waiting)."""
    groups = waiting(state, now)
    ready = awaiting_approval(state)
    approval = (
        [
            f"  ready, awaiting an approval (a reviewer's verdict, or `loopbus approve "
            f"--unit U --why ...` where no reviewer is configured): {', '.join(ready)}"
        ]
        if ready
        else []
    )
    if not groups:
        return ["waiting on nothing: no unit is blocked", *approval]
    lines = [f"waiting on {len(groups)} subject(s):"]
    for group in groups:
        units = ", ".join(
            f"{u['unit']} ({duration(u['waited_s'])}{', held' if u['held'] else ''})"
            for u in group["units"]
        )
        lines.append(f"  {group['reason']} {group['subject']}: {units}")
    return lines + approval


def print_waiting(
    project: str,
    state: UnitsState,
    *,
    as_json: bool,
    blocked: blocking.BlockingState | None = None,
) -> int:
    """``loopbus status --waiting``: print the waits, then the open blocked-by-fact findings
    and the units they hold from dispatch (as one JSON document with ``--json``)."""
    facts = blocked_by_fact(blocked) if blocked is not None else []
    if as_json:
        import json

        document = {
            "project": project,
            "waiting": waiting(state),
            "awaiting_approval": awaiting_approval(state),
            "blocked_by_fact": facts,
        }
        print(json.dumps(document))
        return 0
    lines = render_waiting(state)
    for fact in facts:
        holding = ", ".join(fact["holding"]) or "no unit yet"
        lines.append(
            f"  blocked-by-fact {fact['finding']} on {fact['about']} (by {fact['by']}): "
            f"{fact['message']}; holding {holding} until a new plan or decision answers it"
        )
    print(f"{project}: " + "\n".join(one_line(line) for line in lines))
    return 0


def blocked_by_fact(state: blocking.BlockingState) -> list[dict[str, Any]]:
    """The open blocked-by-fact findings: what each is about and the units it holds."""
    return [
        {
            "finding": found.finding,
            "about": f"plan:{found.slice}" if found.slice else f"decision:{found.decision}",
            "message": found.message,
            "by": found.by,
            "holding": list(found.reached),
            "routed": found.routed,
        }
        for found in blocking.open_blocks(state)
    ]
