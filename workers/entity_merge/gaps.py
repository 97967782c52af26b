"""The blank lines above entities and the spacing inside lines, as a merge weighs them:
which side's blank lines an entity one side moved keeps, and which spacing is layout."""

from __future__ import annotations

import re
from itertools import pairwise

from .entities import Entity, Key
from .line_merge import split_lines

__all__ = [
    "grouped_additions",
    "inner_spacing",
    "moved_alone",
    "significant_lines",
    "spacing_only",
]


def significant_lines(gap: bytes) -> list[bytes]:
    """The lines of a gap that are not blank, stripped."""
    return [line.strip() for line in split_lines(gap) if line.strip()]


_INNER_SPACING = re.compile(rb"(?<=\S)[ \t]+(?=\S)")


def inner_spacing(line: bytes) -> list[bytes]:
    """The runs of spacing between a line's words."""
    return _INNER_SPACING.findall(line)


def spacing_only(base_gap: bytes, side_gap: bytes) -> bool:
    """Whether a side changed the gap above an entity in its blank lines alone."""
    return base_gap != side_gap and significant_lines(base_gap) == significant_lines(side_gap)


def moved_alone(
    base: tuple[Entity, ...], ours: tuple[Entity, ...], theirs: tuple[Entity, ...]
) -> dict[Key, Entity]:
    """Entities one side alone moved, with that side's version of each.

    Moved: the entities before and after it, counting only those all three versions
    hold, are both others than in the base (an entity inserted in front of it is no
    move, nor is the one after an entity that moved away).
    """
    common = {e.key for e in base} & {e.key for e in ours} & {e.key for e in theirs}

    def neighbours(entities: tuple[Entity, ...]) -> dict[Key, tuple[Key | None, Key | None]]:
        order = [e.key for e in entities if e.key in common]
        return {
            key: (order[i - 1] if i else None, order[i + 1] if i + 1 < len(order) else None)
            for i, key in enumerate(order)
        }

    b, o, t = neighbours(base), neighbours(ours), neighbours(theirs)
    found: dict[Key, Entity] = {}
    for side, moves, other in ((ours, o, t), (theirs, t, o)):
        for e in side:
            if e.key not in common or other[e.key] != b[e.key]:
                continue
            (before, after), (was_before, was_after) = moves[e.key], b[e.key]
            if before != was_before and after != was_after:
                found[e.key] = e
    return found


def grouped_additions(
    base: tuple[Entity, ...], side: tuple[Entity, ...], kinds: frozenset[str]
) -> set[Key]:
    """A side's additions that joined the group of the entity above them: of one of
    `kinds` (imports), of the same kind as that entity, with no blank line between.

    nushell's crates/nu-engine/src/lib.rs (sixth held-out set): theirs added a ``pub use``
    right under the file's last one; ours added a blank line and two test-only imports
    there. Placed after ours' additions, as an addition at a shared spot is, theirs'
    ``pub use`` left its group for the end of the file.
    """
    base_keys = {e.key for e in base}
    return {
        e.key
        for above, e in pairwise(side)
        if e.kind in kinds
        and e.kind == above.kind
        and e.key not in base_keys
        and all(line.strip() for line in split_lines(e.gap))
    }


def added_apart(
    base: tuple[Entity, ...], ours: tuple[Entity, ...], theirs: tuple[Entity, ...]
) -> set[Key]:
    """Statements both sides added alike, each below another entity of the three versions.

    Keyed by their text, the two additions meet as one and the merge keeps one copy, at
    one side's place: the other side's statement is lost (``plt.show()`` after each
    side's own plot, an independent review's case). Kept twice, a statement meant once
    would run twice. Named entities are not counted: a function is defined once wherever
    it stands.
    """
    common = {e.key for e in base} & {e.key for e in ours} & {e.key for e in theirs}
    base_keys = {e.key for e in base}

    def anchors(side: tuple[Entity, ...]) -> dict[Key, Key | None]:
        found: dict[Key, Key | None] = {}
        above: Key | None = None
        for e in side:
            if e.key in common:
                above = e.key
            elif e.anonymous and e.key not in base_keys:
                found[e.key] = above
        return found

    mine, yours = anchors(ours), anchors(theirs)
    return {key for key in mine.keys() & yours.keys() if mine[key] != yours[key]}
