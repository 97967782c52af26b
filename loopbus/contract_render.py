"""``loopbus status``: the ``contract_landing`` view as lines (contracts and proposals)."""

from __future__ import annotations

from typing import Any


def render_contracts(state: Any, sizes: Any = None) -> list[str]:
    """One line per slice contract (landed, refused, or holding the slice) and per
    configuration proposal not landed or refused."""
    del sizes
    lines = [f"contracts: {len(state.slices)} brought by accepted plans"]
    for name in state.order:
        found = state.slices.get(name)
        if found is None:
            continue
        changes = found.changes
        what = f"{len(changes.criteria)} criteria, {len(changes.checks)} checks"
        gate = getattr(found, "gate", None)
        if gate is not None:
            done = f"installed as {found.landed[:12]}" if found.landed else "waiting to install"
            lines.append(f"  approved gate {gate}: {'refused' if found.refused else done}")
            continue
        if found.landed is not None:
            lines.append(f"  {name}: landed as {found.landed[:12]} ({what})")
        elif found.refused is not None:
            lines.append(f"  {name}: refused (finding {found.refused}); the slice is held")
        else:
            lines.append(f"  {name}: waiting for the merger to land it ({what}); the slice is held")
    for proposal in state.proposals.values():
        if proposal.landed is None and proposal.refused is None:
            lines.append(
                f"  proposal {proposal.id} by {proposal.principal}: awaiting approval "
                f"(loopbus approve --config {proposal.id} --why ...)"
            )
    return lines
