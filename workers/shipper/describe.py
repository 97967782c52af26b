"""The PR description of a slice, in Markdown: what, why, the risk report, the decisions.

Pure: from the folds and the configured reads the shell passes in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from projections import risk
from projections.risk import RiskState
from projections.shipping import ShippingState
from projections.slices import SlicesState


def description(
    views: SlicesState,
    state: RiskState,
    shipping: ShippingState,
    slice_id: str,
    checks: Mapping[str, Sequence[str]] | None,
) -> str:
    view = views.slices[slice_id]
    lines = [f"# Slice {slice_id}", "", "## What", ""]
    for unit in view.plan.units:
        slice_unit = view.units.get(unit.id)
        ended = slice_unit.state if slice_unit is not None and slice_unit.state else "not run"
        lines.append(f"- {unit.id}: {unit.title or '(untitled)'} ({ended})")
    lines += ["", "## Why", ""]
    decided = state.decisions.get(slice_id, [])
    served = sorted({d.serves for d in decided if d.serves})
    for objective in served:
        text = shipping.objectives.get(objective, "")
        lines.append(f"- objective {objective}" + (f": {text}" if text else ""))
    for capability in view.plan.capabilities:
        lines.append(f"- capability {capability}")
    if not served and not view.plan.capabilities:
        lines.append("- (no charter objective or capability is named by this slice)")
    lines += ["", "## Risk, least verified first", ""]
    lines += [
        f"#{line}" if line.startswith("## ") else line
        for line in risk.render(risk.report(views, state, slice_id, checks))
    ]
    lines += ["## Decisions", ""]
    for d in decided:
        serves = f"; serves {d.serves}" if d.serves else ""
        lines.append(f"- {d.question} -> {d.chosen} (by {d.owner}{serves}; {d.id})")
    if not decided:
        lines.append("- (none recorded for this slice)")
    return "\n".join(lines).rstrip() + "\n"
