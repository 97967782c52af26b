"""How ``loopbus status`` shows the merge queue: trunk, the queue in order, the merge in
flight, and the trunk-red findings that are still their authors' to resolve."""

from __future__ import annotations

from collections.abc import Mapping

from projections.merges import MergesState


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "-"


def render_merges(state: MergesState, sizes: Mapping[str, int] | None = None) -> list[str]:
    trunk = state.trunk
    checked = trunk.checked
    if checked is None or checked.candidate != trunk.commit:
        verdict = "not checked yet"
    elif checked.green:
        verdict = "green"
    else:
        verdict = "red (" + ", ".join(f.test for f in checked.failing[:3]) + ")"
    lines = [
        f"trunk: {_short(trunk.commit)} {verdict}; last green {_short(trunk.green_commit)}",
        f"merges: {state.merged} merged, {state.reverted} reverted, {state.conflicted} "
        f"conflicted, {state.promoted} promoted to contract-wrong, {state.refused} approvals "
        "refused",
    ]
    if state.approvals:
        lines.append(f"approvals waiting for an answer: {len(state.approvals)}")
    lines.append(f"queue: {(sizes or {}).get('queue', len(state.queue))}")
    for position, entry in enumerate(state.queue, start=1):
        tested = entry.tested
        status = (
            "waiting" if tested is None else f"tested {tested.outcome} on {_short(tested.base)}"
        )
        if entry.conflicted:
            status = "conflicted"
        who = f"approved by {entry.approver}"
        lines.append(f"  {position}. {entry.unit} {_short(entry.head)} {who}: {status}")
    advance = state.last_advance
    if advance is not None and not advance.done and advance.reverted is None:
        lines.append(
            f"in flight: {advance.unit} merged as {_short(advance.merge)}, trunk gates due"
        )
    for unit, records in state.reds.items():
        for record in records:
            tests = ", ".join(record.interface[:3])
            lines.append(f"  trunk-red open for {unit}: finding {record.finding} on {tests}")
    return lines
