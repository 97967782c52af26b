"""``status``'s lines for the ``risk`` and ``shipping`` views (the full report is
``loopbus report risk SLICE``; its state is too wide to print as JSON)."""

from __future__ import annotations

from typing import Any

from projections import shipping
from projections.risk import RiskState
from projections.shipping import ShippingState


def render_risk(state: RiskState, sizes: Any = None) -> list[str]:
    del sizes
    slices = sorted(set(state.dismissed) | set(state.decisions))
    dismissed = sum(len(d) for d in state.dismissed.values())
    auto = sum(1 for ds in state.decisions.values() for d in ds if d.owner == "auto")
    return [
        f"risk: {dismissed} finding(s) dismissed, {auto} decision(s) taken auto, over "
        f"{len(slices)} slice(s); `loopbus report risk SLICE` for a slice's report"
    ]


def render_shipping(state: ShippingState, sizes: Any = None) -> list[str]:
    del sizes
    tip = state.tips[-1][:12] if state.tips else "never"
    lines = [f"shipping: trunk's history scanned through {tip}"]
    hold = shipping.hold(state)
    if hold:
        lines.append(f"  HOLD: {hold}")
    for slice_id, bundled in sorted(state.bundled.items()):
        ran = state.ran.get(slice_id)
        shipped = f"; ship command {ran.outcome}" if ran is not None else ""
        lines.append(f"  {slice_id}: bundled as {bundled.branch} / {bundled.tag}{shipped}")
    return lines
