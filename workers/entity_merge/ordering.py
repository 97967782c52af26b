"""The order of a merged region's entities: the two sides' sequences merged around the
entities both kept."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from .entities import Key

__all__ = ["Reordered", "merged_order"]


class Reordered(Exception):
    """Raised when both sides reordered the same entities differently."""


def merged_order(
    base: list[Key],
    ours: list[Key],
    theirs: list[Key],
    keep: set[Key],
    grouped: set[Key] | None = None,
) -> list[Key]:
    """The merged order of surviving keys.

    One side's order is the spine (ours, unless only theirs reordered what both
    kept); the other side's entities are placed after their nearest preceding
    neighbour. When both sides add at the same place, ours' additions come first,
    unless one side's addition came right after an entity the merge drops: the other
    side's additions there took that entity's place, which is above it, so it goes
    after them, just above the entity that follows it on its side. An addition in
    `grouped` (one that joined the group of the entity above it, `gaps.grouped_additions`)
    stays by that entity, above the other side's additions there that did not. What an
    addition's side had above it, of another kind, stays above it wherever the spine
    moved it.
    """
    grouped = grouped or set()
    common = set(base) & set(ours) & set(theirs)
    base_order = [k for k in base if k in common]
    ours_order = [k for k in ours if k in common]
    theirs_order = [k for k in theirs if k in common]
    if ours_order != base_order and theirs_order != base_order and ours_order != theirs_order:
        raise Reordered
    if ours_order == base_order and theirs_order != base_order:
        spine, other, other_first = theirs, ours, True
    else:
        spine, other, other_first = ours, theirs, False
    spine_only = set(spine) - set(base) - set(other)
    base_keys = set(base)
    # What the spine put somewhere of its own: its additions and what it moved there.
    its_own = spine_only | _out_of_order(base_order, theirs_order if other_first else ours_order)
    result = [k for k in spine if k in keep]
    placed = set(result)
    shared = _SharedSpot(
        spine,
        {k: i for i, k in enumerate(other)},
        other_first,
        spine_only,
        base_keys,
        keep,
        grouped,
    )
    anchor: Key | None = None
    for index, key in enumerate(other):
        if key in placed:
            anchor = key
            continue
        if key not in keep:
            continue
        pos = result.index(anchor) + 1 if anchor is not None else 0
        if _after_a_dropped(other, index, base_keys, keep):
            # Added just below an entity the merge drops: what the spine put in that
            # entity's place (its additions, what it moved there) goes above it, and the
            # addition stays above what follows it on its side (at the end when nothing
            # does). When entities the spine left in place stand between, the follower
            # was moved far away by the spine: the addition stays by its anchor.
            follower = next((k for k in other[index + 1 :] if k in placed), None)
            below = result.index(follower) if follower is not None else len(result)
            if below >= pos and all(k in its_own for k in result[pos:below]):
                result.insert(below, key)
                placed.add(key)
                anchor = key
                continue
        pos = shared.past(result, pos, key, index)
        result.insert(pos, key)
        placed.add(key)
        anchor = key
    return result


@dataclass(frozen=True, slots=True)
class _SharedSpot:
    """Where an addition of the other side goes among what the spine has right below
    its anchor (see :func:`merged_order`)."""

    spine: list[Key]
    other_at: dict[Key, int]
    other_first: bool
    spine_only: set[Key]
    base_keys: set[Key]
    keep: set[Key]
    grouped: set[Key]

    def past(self, result: list[Key], pos: int, key: Key, index: int) -> int:
        """The position at or after `pos` where `key`, the other side's `index`-th
        entity, goes in `result`."""
        while pos < len(result) and self._goes_below(result[pos], key, index):
            pos += 1
        return pos

    def _goes_below(self, here: Key, key: Key, index: int) -> bool:
        if self.other_at.get(here, index) < index and _kind(here) != _kind(key):
            # The addition's side had this above it, and it is of another kind; the spine
            # moved it below the anchor (got's get-response.ts: ours moved an import to
            # the end of the imports, theirs added a constant after them; it stays after
            # them all). Among entities of one kind, such as imports one side sorted, the
            # spine's order is all there is to go by.
            return True
        if here not in self.spine_only:
            return False
        if self.other_first:
            # Ours' additions come first, but not between an entity and theirs'
            # additions grouped with it.
            return key not in self.grouped and here in self.grouped
        dropped_above = _after_a_dropped(
            self.spine, self.spine.index(here), self.base_keys, self.keep
        )
        return not dropped_above and (key not in self.grouped or here in self.grouped)


def _kind(key: Key) -> str | None:
    """An entity key's kind; None for the keys of data files, which merge by this too."""
    return key[0] if isinstance(key, tuple) else None


def _out_of_order(base_order: list[Key], side_order: list[Key]) -> set[Key]:
    """The entities a side moved: those outside the longest run of matches between the
    base's order and the side's (an entity moved with its neighbours moved too)."""
    matcher = difflib.SequenceMatcher(None, base_order, side_order, autojunk=False)
    stayed = {
        side_order[j + i] for _, j, size in matcher.get_matching_blocks() for i in range(size)
    }
    return set(side_order) - stayed


def _after_a_dropped(side: list[Key], index: int, base: set[Key], keep: set[Key]) -> bool:
    """Whether the entity right before `side[index]` is a base entity the merge drops
    (irc.py: ours added a function below `from time import sleep`, theirs replaced that
    import with four; theirs' imports belong where it stood, above ours' function)."""
    return index > 0 and side[index - 1] in base and side[index - 1] not in keep
