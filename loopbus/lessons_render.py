"""How the ``lessons`` projection reads in ``loopbus status``: each closed slice's lessons
and the branch hygiene its closeout left."""

from __future__ import annotations

from collections.abc import Mapping

from projections import lessons as lessons_fold

MAX_SHOWN = 10


def render_lessons(state: lessons_fold.LessonsState, sizes: Mapping[str, int] = {}) -> list[str]:
    lines = [f"lessons: {len(state.recorded)} slices recorded"]
    for line in lessons_fold.in_force(state, MAX_SHOWN):
        lines.append(f"  {line}")
    for slice_id, due in lessons_fold.due(state):
        lines.append(f"  {slice_id}: {len(due.lessons)} lessons not recorded yet")
    for slice_id in sorted(state.closed_out):
        out = state.closed_out[slice_id]
        if out.problem:
            lines.append(f"  closeout {slice_id}: {out.problem}")
            continue
        kept = "; ".join(f"{k.branch} ({k.why})" for k in out.kept) or "none"
        lines.append(
            f"  closeout {slice_id}: deleted {len(out.deleted)} unit branches, removed "
            f"{len(out.removed)} checkouts; {out.branches} unit branches and {out.worktrees} "
            f"unit checkouts remain; kept: {kept}"
        )
    for closing in lessons_fold.to_close_out(state):
        lines.append(f"  closeout {closing.slice}: not done yet")
    return lines
