"""Merge one import or export statement that both sides changed, name by name.

``from m import a`` edited into ``from m import a, b`` on one side and into
``from m import a, c`` on the other is one statement with one list of names; a line
merge can only conflict on it or, if the statement's identity is lost, keep it twice.
Here the statement is cut into the text before its first name, the names and the text
after the last one; the outer texts merge three-way as wholes, the names as a set
(each side's deletions applied, each side's additions kept, in ours' order). The
result is refused (None, and the caller conflicts) whenever something would be lost
or guessed: both sides changed the outer text, one side moved the statement to another
module while the other added names (they may not exist there), the names are not laid
out uniformly, or one name would be imported or bound twice (``a as x`` against
``a as y``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

from .languages import LanguageSpec

__all__ = ["combine_names", "lists_names"]


@dataclass(frozen=True, slots=True)
class _Shape:
    prefix: bytes
    items: tuple[bytes, ...]
    imported: tuple[str, ...]
    bound: tuple[str, ...]
    separator: bytes | None
    suffix: bytes
    # The text between each name and the next; all alike unless the list is filled
    # (wrapped to a width, some names ending a line), and then `separator` is None.
    gaps: tuple[bytes, ...] = ()


def _ident(item: bytes) -> bytes:
    return b" ".join(item.split())


def lists_names(spec: LanguageSpec, text: bytes) -> bool:
    """Whether `text` is a statement of names (``from m import a, b``, ``export { a }``)."""
    if spec.name_list is None:
        return False
    root = spec.parser().parse(text).root_node
    statement = next((c for c in reversed(root.named_children) if c.type != "comment"), None)
    return statement is not None and spec.name_list(statement) is not None


def _shape(spec: LanguageSpec, text: bytes) -> _Shape | None:
    if spec.name_list is None:
        return None
    root = spec.parser().parse(text).root_node
    if root.has_error:
        return None
    statement = next((c for c in reversed(root.named_children) if c.type != "comment"), None)
    listed = spec.name_list(statement) if statement is not None else None
    if statement is None or listed is None:
        return None
    offset = statement.start_byte
    spans = [(offset + start, offset + end) for start, end in listed.items]
    gaps = tuple(text[end:start] for (_, end), (start, _) in pairwise(spans))
    if any(gap.strip() != b"," for gap in gaps):
        return None  # comments between names: leave it to the line merge
    if len(set(gaps)) > 1 and any(gap.count(b"\n") > 1 for gap in gaps):
        return None  # blank lines between names group them: not a layout to guess at
    return _Shape(
        prefix=text[: spans[0][0]],
        items=tuple(text[start:end] for start, end in spans),
        imported=listed.imported,
        bound=listed.bound,
        separator=gaps[0] if len(set(gaps)) == 1 else None,
        suffix=text[spans[-1][1] :],
        gaps=gaps,
    )


def _moved(base: _Shape, side: _Shape) -> bool:
    """Whether `side` changed what the statement imports from, layout aside."""
    return _source(base) != _source(side)


def _source(shape: _Shape) -> bytes:
    return re.sub(rb"[\s(){},]", b"", shape.prefix + b"\0" + shape.suffix)


def _added(base: _Shape, side: _Shape) -> bool:
    return bool({_ident(i) for i in side.items} - {_ident(i) for i in base.items})


def _outer(base: bytes | None, ours: bytes, theirs: bytes) -> bytes | None:
    if ours == theirs or (base is not None and theirs == base):
        return ours
    if base is not None and ours == base:
        return theirs
    return None


def _names(base: _Shape | None, ours: _Shape, theirs: _Shape) -> list[int] | None:
    """Indices into ours.items + theirs.items of the merged names, in merged order."""
    base_ids = {_ident(i) for i in base.items} if base is not None else set()
    ours_ids = [_ident(i) for i in ours.items]
    theirs_ids = [_ident(i) for i in theirs.items]
    gone = (base_ids - set(ours_ids)) | (base_ids - set(theirs_ids))
    merged = [n for n, ident in enumerate(ours_ids) if ident not in gone]
    # Where both sides added names at one place, ours' come first, as for entities.
    ours_added = {n for n, i in enumerate(ours_ids) if i not in base_ids and i not in theirs_ids}
    anchor = -1
    for n, ident in enumerate(theirs_ids):
        if ident in ours_ids:
            if ident not in gone:
                anchor = merged.index(ours_ids.index(ident))
            continue
        if ident in base_ids or ident in theirs_ids[:n]:
            continue
        anchor += 1
        while anchor < len(merged) and merged[anchor] in ours_added:
            anchor += 1
        merged.insert(anchor, len(ours_ids) + n)
    return merged or None


# The orders a file may keep a name list in: by the text of each item or by the name
# it binds (``b as a`` sorts under ``a``), with or without case.
_ORDERS: tuple[tuple[bool, bool], ...] = (
    (False, False),
    (False, True),
    (True, False),
    (True, True),
)


def _keys(items: tuple[bytes, ...], bound: tuple[str, ...], how: tuple[bool, bool]) -> list[str]:
    by_bound, nocase = how
    texts = bound if by_bound else tuple(_ident(i).decode("utf-8", "replace") for i in items)
    return [text.lower() if nocase else text for text in texts]


def _sorted(shape: _Shape, how: tuple[bool, bool]) -> bool:
    keys = _keys(shape.items, shape.bound, how)
    return len(keys) >= 2 and keys == sorted(keys)


def _in_file_order(order: list[int], o: _Shape, t: _Shape) -> list[int]:
    """`order` sorted when the file keeps this list sorted.

    Ours' list says (theirs' if ours has one name); where it is sorted in more than one
    way, the way theirs is sorted too wins. `order` indexes ``o.items + t.items``.
    """
    lead, other = (o, t) if len(o.items) >= 2 else (t, o)
    ways = [how for how in _ORDERS if _sorted(lead, how)]
    if not ways:
        return order
    how = next((way for way in ways if _sorted(other, way)), ways[0])
    merged = _keys(o.items + t.items, o.bound + t.bound, how)
    return sorted(order, key=lambda n: merged[n])


def _one_per_line(shape: _Shape) -> bytes | None:
    """The separator of a braced list laid out one name per line, seen from its prefix."""
    line = shape.prefix.rsplit(b"\n", 1)
    if len(line) == 2 and not line[1].strip() and shape.suffix.lstrip().startswith(b","):
        return b",\n" + line[1]
    return None


def _filled(
    items: tuple[bytes, ...], order: list[int], gaps: tuple[bytes, ...], lead: int
) -> bytes:
    """The names of `order` laid out as a filled list whose own gaps are `gaps`.

    `items[lead:lead + len(gaps) + 1]` are the names of the list whose layout is kept.
    A name of that list follows the gap before it in that list; where names before it
    were dropped, a line break among their gaps is kept, so the lines stay about as
    long as they were. A name from the other list is written after ", ".
    """
    out: list[bytes] = []
    last: int | None = None
    for n in order:
        position = n - lead
        if out:
            own = 0 <= position <= len(gaps)
            if own and last is not None and last < position:
                # Names dropped in between: keep a line break one of their gaps had.
                between = gaps[last:position]
                out.append(next((gap for gap in between if b"\n" in gap), between[-1]))
            else:
                out.append(b", ")
        if 0 <= position <= len(gaps):
            last = position
        out.append(items[n])
    return b"".join(out)


def combine_names(
    spec: LanguageSpec, base: bytes | None, ours: bytes, theirs: bytes
) -> bytes | None:
    """One statement holding both sides' changes to its names, or None if they collide.

    `base` is None when both sides added a statement for the same module.
    """
    o, t = _shape(spec, ours), _shape(spec, theirs)
    b = _shape(spec, base) if base is not None else None
    if o is None or t is None or (base is not None and b is None):
        return None
    if b is not None and ((_moved(b, o) and _added(b, t)) or (_moved(b, t) and _added(b, o))):
        # A name exists in one module: added to the old one by one side while the
        # other side moved the statement to a new module, it may not exist there.
        return None
    prefix = _outer(b.prefix if b else None, o.prefix, t.prefix)
    suffix = _outer(b.suffix if b else None, o.suffix, t.suffix)
    order = _names(b, o, t)
    if prefix is None or suffix is None or order is None:
        return None
    items = o.items + t.items
    order = _in_file_order(order, o, t)
    imported = [(o.imported + t.imported)[n] for n in order]
    bound = [(o.bound + t.bound)[n] for n in order]
    if len(set(imported)) < len(imported) or len(set(bound)) < len(bound):
        return None
    # The layout goes with the frame: theirs' separator when the braces are theirs.
    first, second = (t, o) if prefix != o.prefix else (o, t)
    if first.separator is None and first.gaps:
        lead = 0 if first is o else len(o.items)
        return prefix + _filled(items, order, first.gaps, lead) + suffix
    separator = (
        first.separator
        or _one_per_line(first)
        or second.separator
        or (b.separator if b else None)
        or _one_per_line(second)
        or b", "
    )
    return prefix + separator.join(items[n] for n in order) + suffix


def keep_additions(spec: LanguageSpec, base: bytes, kept: bytes) -> bytes | None:
    """What is left of a statement one side deleted and the other changed, or None.

    The deletion takes every name the statement had; the other side's own additions
    survive it, in its statement (b"" if it added none). None when the statements
    cannot be cut into names, and the caller reports modify/delete.
    """
    b, k = _shape(spec, base), _shape(spec, kept)
    if b is None or k is None:
        return None
    had = {_ident(i) for i in b.items}
    added = [i for i in k.items if _ident(i) not in had]
    if not added:
        return b""
    separator = k.separator or b.separator or b", "
    return k.prefix + separator.join(added) + k.suffix
