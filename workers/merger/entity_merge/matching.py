"""Which entity of one version is which entity of another, and in what order they go.

Matching is by key (kind, owner, name, occurrence), repaired where keys mislead:
repeats of one name are paired by content, and an entity that vanished is paired
with a look-alike that appeared in its place (an edit of an unnamed statement, a
rename). Ordering merges the two sides' sequences around the entities both kept.
"""

from __future__ import annotations

import difflib
from dataclasses import replace

from .entities import Entity, Key
from .line_merge import split_lines

__all__ = ["Reordered", "align_repeats", "merged_order", "rematch"]


class Reordered(Exception):
    """Raised when both sides reordered the same entities differently."""


def align_repeats(base: tuple[Entity, ...], side: tuple[Entity, ...]) -> tuple[Entity, ...]:
    """Match entities that share kind, owner and name by content, not by position.

    Extraction numbers repeats (overloads, Go `init` functions) in order, so a side
    adding one in front would shift every number after it and pair each repeat with
    its neighbour. Here the side's repeats are aligned with the base's by their text:
    equal texts pair up, unpaired ones between them pair in order (edits), and those
    left over are additions, keyed by their text so that two sides adding different
    ones both keep theirs while two identical additions collapse into one.
    """
    groups: dict[tuple[str, str, str], list[int]] = {}
    for i, e in enumerate(side):
        groups.setdefault((e.kind, e.owner, e.name), []).append(i)
    base_groups: dict[tuple[str, str, str], list[Entity]] = {}
    for e in base:
        base_groups.setdefault((e.kind, e.owner, e.name), []).append(e)
    result = list(side)
    for ident, positions in groups.items():
        originals = base_groups.get(ident, [])
        if len(positions) < 2 and len(originals) < 2:
            continue
        texts = [side[p].text for p in positions]
        matcher = difflib.SequenceMatcher(None, [e.text for e in originals], texts, autojunk=False)
        added: dict[str, int] = {}
        for tag, b0, b1, s0, s1 in matcher.get_opcodes():
            paired = 0 if tag == "insert" else min(b1 - b0, s1 - s0)
            for offset in range(s1 - s0):
                p = positions[s0 + offset]
                if offset < paired:
                    occurrence: int | str = originals[b0 + offset].occurrence
                else:
                    text = side[p].text.decode("utf-8", errors="replace")
                    seen = added.get(text, 0)
                    added[text] = seen + 1
                    occurrence = f"added {seen}: {text}"
                result[p] = replace(side[p], occurrence=occurrence)
    return tuple(result)


# How alike (difflib ratio over lines) an added entity must be to one the same side
# deleted from the same place to count as that entity renamed.
_RENAME_SIMILARITY = 0.6


def _same_entity(old: Entity, new: Entity) -> bool:
    """Whether `new`, found where `old` was, is `old` edited (or renamed)."""
    if old.anonymous or new.anonymous:
        return old.anonymous and new.anonymous and old.node_type == new.node_type
    if (old.kind, old.owner) != (new.kind, new.owner):
        return False
    matcher = difflib.SequenceMatcher(
        None, split_lines(old.text), split_lines(new.text), autojunk=False
    )
    return matcher.ratio() >= _RENAME_SIMILARITY


def rematch(base: tuple[Entity, ...], side: tuple[Entity, ...]) -> tuple[Entity, ...]:
    """Give an entity that looks like an edit of a vanished base entity that one's key.

    An edited unnamed statement (keyed by its text) or a renamed function looks
    like a delete plus an add. Pairing a vanished base entity with a new one of the
    same kind in the same slot (between the same surviving neighbours) — for named
    entities only when their text is mostly the same — turns that back into a
    modification. Then a rename on one side and a body edit on the other merge, and
    two sides editing one statement meet in one merge instead of both surviving.
    """
    side_keys = {e.key for e in side}
    missing = [i for i, e in enumerate(base) if e.key not in side_keys]
    if not missing:
        return side
    base_keys = {e.key for e in base}
    position = {e.key: i for i, e in enumerate(side)}
    result = list(side)
    taken: set[int] = set()
    for i in missing:
        before = next(
            (position[base[j].key] for j in range(i - 1, -1, -1) if base[j].key in position),
            -1,
        )
        after = next(
            (position[base[j].key] for j in range(i + 1, len(base)) if base[j].key in position),
            len(side),
        )
        for p in range(before + 1, after):
            candidate = result[p]
            if p in taken or candidate.key in base_keys or not _same_entity(base[i], candidate):
                continue
            result[p] = replace(candidate, name=base[i].name, occurrence=base[i].occurrence)
            taken.add(p)
            break
    return tuple(result)


def merged_order(base: list[Key], ours: list[Key], theirs: list[Key], keep: set[Key]) -> list[Key]:
    """The merged order of surviving keys.

    One side's order is the spine (ours, unless only theirs reordered what both
    kept); the other side's entities are placed after their nearest preceding
    neighbour. When both sides add at the same place, ours' additions come first.
    """
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
    result = [k for k in spine if k in keep]
    placed = set(result)
    anchor: Key | None = None
    for key in other:
        if key in placed:
            anchor = key
            continue
        if key not in keep:
            continue
        pos = result.index(anchor) + 1 if anchor is not None else 0
        if not other_first:
            while pos < len(result) and result[pos] in spine_only:
                pos += 1
        result.insert(pos, key)
        placed.add(key)
        anchor = key
    return result
