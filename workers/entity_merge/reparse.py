"""Parse one version of a file as an edit of another, so tree-sitter re-reads little.

Three versions of a file and the merge result share most of their lines. tree-sitter
can reuse a tree for unchanged text if it is told where the text changed; a fresh
parse of every version was the largest cost of a merge. The changed places are found
by lines: lines that occur once in each version and in the same order anchor the two
versions to each other, and each stretch between anchors that differs is one edit.
Anchors are picked greedily, not optimally; a poor pick only means more is re-read.
"""

from __future__ import annotations

from itertools import accumulate

from tree_sitter import Parser, Point, Tree

from .line_merge import shared_run

__all__ = ["reparse"]

# Edits beyond this many are joined across the smallest gaps: each edit costs a walk
# of the tree, and a few wide edits re-read little more than many narrow ones.
_MAX_EDITS = 8
LineEdit = tuple[int, int, int, int]


def line_edits(old: list[bytes], new: list[bytes]) -> list[LineEdit]:
    """(old_start, old_stop, new_start, new_stop) line ranges where `new` differs, in order."""
    # Most edits are local: only the stretch between the common first and last lines
    # needs anchors.
    low = shared_run(old, new, min(len(old), len(new)))
    tail = shared_run(old, new, min(len(old), len(new)) - low, from_end=True)
    old_mid, new_mid = old[low : len(old) - tail], new[low : len(new) - tail]
    # A line seen once in the new text anchors there; any increasing run of equal
    # lines gives a correct edit list, and unique lines make it a tight one.
    where: dict[bytes, int] = {}
    for j, line in enumerate(new_mid, low):
        where[line] = -1 if line in where else j
    # Only the stretches between two anchors that are not on consecutive lines of both
    # texts can hold an edit; most anchors are, so the loop keeps just the others
    # (walking every pair of anchors afterwards cost as much as finding them).
    gaps: list[LineEdit] = []
    i0 = j0 = low - 1
    for i, line in enumerate(old_mid, low):
        j = where.get(line, -1)
        if j > j0:
            if i != i0 + 1 or j != j0 + 1:
                gaps.append((i0, i, j0, j))
            i0, j0 = i, j
    gaps.append((i0, len(old) - tail, j0, len(new) - tail))
    edits: list[LineEdit] = []
    for i1, i2, j1, j2 in gaps:
        a0, a1, b0, b1 = i1 + 1, i2, j1 + 1, j2
        while a0 < a1 and b0 < b1 and old[a0] == new[b0]:
            a0, b0 = a0 + 1, b0 + 1
        while a0 < a1 and b0 < b1 and old[a1 - 1] == new[b1 - 1]:
            a1, b1 = a1 - 1, b1 - 1
        if a0 < a1 or b0 < b1:
            edits.append((a0, a1, b0, b1))
    while len(edits) > _MAX_EDITS:
        k = min(range(len(edits) - 1), key=lambda n: edits[n + 1][0] - edits[n][1])
        (a0, _, b0, _), (_, a1, _, b1) = edits[k], edits[k + 1]
        edits[k : k + 2] = [(a0, a1, b0, b1)]
    return edits


def _point(lines: list[bytes], start: int, stop: int, row: int) -> Point:
    """Where text ends once `lines[start:stop]` are laid out from row `row` on.

    Rows, not bytes, as tree-sitter wants them: past a last line that lacks its
    newline, the end is on that line, not at the start of the next.
    """
    if stop == len(lines) and stop > start and not lines[-1].endswith(b"\n"):
        return Point(row + stop - start - 1, len(lines[-1]))
    return Point(row + stop - start, 0)


def reparse(
    parser: Parser, old_tree: Tree, old: list[bytes], new: list[bytes], data: bytes
) -> tuple[Tree, int, int]:
    """Parse `data` (split into lines `new`) reusing `old_tree`, the tree of lines `old`.

    Returns the tree and the byte range of `data` that holds every change.
    """
    edits = line_edits(old, new)
    if not edits:
        return old_tree, 0, 0
    old_at = [0, *accumulate(map(len, old))]
    new_at = [0, *accumulate(map(len, new))]
    tree = old_tree.copy()
    # Last edit first: an edit moves only what follows it, so the earlier edits'
    # positions, taken from the old text, are still right when they are applied.
    for a0, a1, b0, b1 in reversed(edits):
        start = old_at[a0]
        tree.edit(
            start_byte=start,
            old_end_byte=old_at[a1],
            new_end_byte=start + new_at[b1] - new_at[b0],
            start_point=_point(old, 0, a0, 0),
            old_end_point=_point(old, 0, a1, 0),
            new_end_point=_point(new, b0, b1, a0),
        )
    return parser.parse(data, tree), new_at[edits[0][2]], new_at[edits[-1][3]]
