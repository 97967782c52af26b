"""Putting a state back together from the values of its partitioned view.

The inverse of :func:`bus.view_layout.pieces`: every value says where it stands
(its key's tokens and, for entries, its own keys ``k``), so values can come in any order,
and some may be missing — a reader that pages a big collection assembles the entries it
read, and gets a valid state that holds only part of it. The sizes the heads record
(``n``) say how much is missing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from bus.view_layout import CHUNK_ITEMS, Coll, Node


class Stored(msgspec.Struct):
    """One stored value, as the projector writes it (see :mod:`bus.views`)."""

    f: int = 0
    seq: int | None = None
    k: list[str] = []
    n: Any = None
    v: Any = None
    i: int | None = None


@dataclass
class Assembled:
    """A state put back together, what its heads say it holds, and what was left out."""

    seq: int
    doc: dict[str, Any]
    sizes: dict[str, int] = field(default_factory=dict)
    """Field path (``units``, ``open``, ``slices.units``) -> how many entries (bottom
    entries, for a collection cut deeper) or items the heads that were read record."""
    shown: dict[str, int] = field(default_factory=dict)
    """The same paths -> how many were assembled."""

    def state(self, state_type: type) -> Any:
        return msgspec.convert(self.doc, state_type)

    @property
    def partial(self) -> dict[str, tuple[int, int]]:
        """Path -> (shown, total) for every collection or list not assembled whole."""
        return {
            path: (self.shown.get(path, 0), total)
            for path, total in self.sizes.items()
            if self.shown.get(path, 0) < total
        }


@dataclass
class _Placed:
    steps: list[str | int]  # JSON names and entry keys from the state's root
    fields: str  # the field path (names only), e.g. "slices.units"
    kind: str  # "head", "entry" or "chunk"
    layout: Node | Coll | None
    stored: Stored


def _place(root: Node, tokens: list[str], stored: Stored) -> _Placed | None:
    """Where a value with these key tokens stands (``None``: no place of this layout)."""
    at: Node | Coll | None = root
    kind = "head"
    steps: list[str | int] = []
    fields: list[str] = []
    keys = iter(stored.k)
    for tok in tokens:
        if kind == "list":
            if not tok.isdigit():
                return None
            steps.append(int(tok))
            kind, at = "chunk", None
        elif isinstance(at, Coll):
            key = next(keys, None)
            if key is None:
                return None
            steps.append(key)
            kind, at = "entry", at.entry
        elif isinstance(at, Node) and tok in at.names:
            steps.append(at.names[tok])
            fields.append(tok)
            if tok in at.colls:
                kind, at = "coll", at.colls[tok]
            elif tok in at.subs:
                kind, at = "head", at.subs[tok]
            elif tok in at.lists:
                kind, at = "list", None
            else:
                return None
        else:
            return None
    if kind in ("coll", "list"):
        return None
    return _Placed(steps, ".".join(fields), kind, at, stored)


def _with_placeholders(node: Node, head: Any) -> dict[str, Any]:
    doc = dict(head) if isinstance(head, dict) else {}
    for attr in node.colls:
        doc[node.names[attr]] = {}
    for attr in node.lists:
        doc[node.names[attr]] = []
    return doc


def assemble(root: Node, values: Iterable[tuple[list[str], Stored]]) -> Assembled | None:
    """The state from ``(key tokens after view.<project>.<fold>, value)`` pairs; ``None``
    without the state's head (the view was never written)."""
    placed = [p for tokens, stored in values if (p := _place(root, tokens, stored)) is not None]
    placed.sort(key=lambda p: len(p.steps))
    if not placed or placed[0].steps:
        return None
    head = placed[0].stored
    result = Assembled(seq=head.seq or 0, doc=_with_placeholders(root, head.v))
    _add_sizes(result, root, head.n, "")
    chunks: dict[tuple[str | int, ...], dict[int, list[Any]]] = {}
    for piece in placed[1:]:
        last = piece.steps[-1]
        if isinstance(last, int):  # a chunk of a list, held by the list's parent
            if _find(result.doc, piece.steps[:-2]) is not None:
                chunks.setdefault(tuple(piece.steps[:-1]), {})[last] = list(piece.stored.v or [])
            continue
        parent = _find(result.doc, piece.steps[:-1])
        if parent is None:
            continue  # its parent was not read (a page): it cannot be placed
        if isinstance(piece.layout, Node):
            parent[last] = _with_placeholders(piece.layout, piece.stored.v)
            _add_sizes(result, piece.layout, piece.stored.n, piece.fields + ".")
        elif isinstance(piece.layout, Coll):
            parent[last] = {}
        else:
            parent[last] = piece.stored.v
        if piece.kind == "entry" and not isinstance(piece.layout, Coll):
            result.shown[piece.fields] = result.shown.get(piece.fields, 0) + 1
    for steps, found in chunks.items():
        _join_chunks(result, list(steps), found)
    return result


def _join_chunks(result: Assembled, steps: list[str | int], found: dict[int, list[Any]]) -> None:
    target = _find(result.doc, steps[:-1])
    if target is None:
        return
    items: list[Any] = []
    for index in sorted(found):
        if index * CHUNK_ITEMS != len(items):
            break  # a chunk was not read: keep the run from the start
        items.extend(found[index])
    target[str(steps[-1])] = items
    fields = ".".join(str(s) for s in steps)
    result.shown[fields] = len(items)


def _add_sizes(result: Assembled, node: Node, sizes: Any, prefix: str) -> None:
    """Add a head's recorded sizes (a sub-collection's sizes add up over its parents)."""
    if not isinstance(sizes, dict):
        return
    for attr in node.sized:
        size = sizes.get(node.names[attr])
        if isinstance(size, int):
            path = prefix + attr
            result.sizes[path] = result.sizes.get(path, 0) + size


def _find(doc: dict[str, Any], steps: list[str | int]) -> dict[str, Any] | None:
    current: Any = doc
    for step in steps:
        if not isinstance(current, dict):
            return None
        current = current.get(step)
    return current if isinstance(current, dict) else None
