"""Cut a parsed file into entities and the text between them.

The cut is by whole lines. A region (the file, or a class body) becomes a `head`
(comments and blank lines before the first entity), a sequence of entities each
with the `gap` of blank lines and loose comments above it, and a `tail`. Joining
the pieces back in order reproduces the region byte for byte, which is what lets
the merge work on pieces and still write out an ordinary file.

Every statement is an entity. Those a language classifier names (functions,
classes, imports …) are matched across versions by kind, owner and name; the rest
are "anonymous" and matched by their exact text, so that the gaps between entities
hold nothing but whitespace and comments and never carry code along with them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node

from .languages import LanguageSpec

__all__ = ["Entity", "Inside", "Key", "NotSplittable", "Region", "extract"]

# (kind, owner, name, occurrence). Occurrence tells apart entities that share the
# first three, e.g. TypeScript overloads or two `init` functions in one Go file: it
# is the entity's index among them, or, for one the merge found a side added, a
# string naming it by its text (see `matching.align_repeats`).
# The enclosing class is not part of the key: members are only ever matched against
# members of the same container, and leaving it out lets a renamed class still
# match its members. `owner` is only set where a language says an entity belongs
# to something it is not nested in (a Go method's receiver type).
Key = tuple[str, str, str, int | str]

_OPEN = frozenset({"{", "("})
_CLOSE = frozenset({"}", ")"})
_ANONYMOUS = "statement"


class NotSplittable(Exception):
    """Raised when two statements share a line, so no line-based cut separates them."""


@dataclass(frozen=True, slots=True)
class Entity:
    """One entity of one version of a file, with the lines it owns."""

    kind: str
    name: str
    # Qualified name of what the entity belongs to, for people: ``Cart`` for a method.
    parent: str
    owner: str
    occurrence: int | str
    node_type: str
    gap: bytes
    text: bytes
    # How many bytes of `text` are the comments (or decorators) attached above the
    # entity's own node: what follows is its code.
    attached: int = 0
    # A container (class, interface, Go import group …) also exposes its inside, so
    # two sides changing different members of one class can both be kept. It is cut
    # on demand (see `inside`): most containers are unchanged on one side and never
    # need it.
    expand: Callable[[], Inside | None] | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> Key:
        """What this entity is matched on across base, ours and theirs."""
        return (self.kind, self.owner, self.name, self.occurrence)

    def inside(self) -> Inside | None:
        """The container's header, inside and footer, or None for a leaf entity."""
        return self.expand() if self.expand is not None else None

    @property
    def code(self) -> bytes:
        """The entity's own text, without the comments attached above it."""
        return self.text[self.attached :]

    @property
    def anonymous(self) -> bool:
        """True for statements no classifier named; their key is their text."""
        return self.kind == _ANONYMOUS

    @property
    def display_name(self) -> str:
        """The name shown to people: ``Cart.total``, or a statement's first line."""
        if self.anonymous:
            first = self.text.decode("utf-8", errors="replace").strip().splitlines()
            return first[0][:60] if first else ""
        return f"{self.parent}.{self.name}" if self.parent else self.name

    @property
    def label(self) -> str:
        """Kind and name, e.g. ``method Cart.total``; conflict markers carry it."""
        return f"{self.kind} {self.display_name}"


@dataclass(frozen=True, slots=True)
class Region:
    """A run of lines split into head, entities (each with its gap) and tail."""

    head: bytes
    entities: tuple[Entity, ...]
    tail: bytes


@dataclass(frozen=True, slots=True)
class Inside:
    """A container cut open: the lines above its members, the members, the lines below."""

    header: bytes
    body: Region
    footer: bytes


def _last_row(node: Node) -> int:
    # A node that swallows its final newline ends at column 0 of the next row.
    end = node.end_point
    if end.column == 0 and end.row > node.start_point.row:
        return end.row - 1
    return end.row


def _join(lines: list[bytes], start: int, stop: int) -> bytes:
    return b"".join(lines[start:stop])


@dataclass(slots=True)
class _Chunk:
    node: Node
    first: int
    last: int


def _chunks(children: list[Node], spec: LanguageSpec, start: int, stop: int) -> list[_Chunk]:
    """Group the children of a region into entity chunks spanning whole rows."""
    chunks: list[_Chunk] = []
    attached: list[Node] = []
    previous_last = start - 1
    for child in children:
        first, last = child.start_point.row, _last_row(child)
        if first < start or last >= stop:
            raise NotSplittable(f"{child.type} at row {first} leaves its region")
        if first <= previous_last:
            if child.type in spec.trailing and first == previous_last:
                continue
            raise NotSplittable(f"{child.type} at row {first} shares a line")
        previous_last = last
        if child.type in spec.attached:
            if attached and _last_row(attached[-1]) + 1 != first:
                attached = []
            attached.append(child)
            continue
        if attached and _last_row(attached[-1]) + 1 == first:
            first = attached[0].start_point.row
        attached = []
        chunks.append(_Chunk(child, first, last))
    return chunks


def _region(
    lines: list[bytes],
    children: list[Node],
    start: int,
    stop: int,
    spec: LanguageSpec,
    parent: str,
    container: str | None,
) -> Region:
    chunks = _chunks(children, spec, start, stop)
    if not chunks:
        return Region(head=_join(lines, start, stop), entities=(), tail=b"")
    # Blank lines right above the first entity are its gap, not part of the head,
    # so an entity added at the top brings its own spacing and the head (a licence,
    # a module comment) is never duplicated.
    head_end = chunks[0].first
    while head_end > start and not lines[head_end - 1].strip():
        head_end -= 1
    seen: dict[tuple[str, str, str], int] = {}
    entities: list[Entity] = []
    gap_start = head_end
    for chunk in chunks:
        entity = _entity(lines, chunk, gap_start, spec, parent, container, seen)
        entities.append(entity)
        gap_start = chunk.last + 1
    return Region(
        head=_join(lines, start, head_end),
        entities=tuple(entities),
        tail=_join(lines, gap_start, stop),
    )


def _entity(
    lines: list[bytes],
    chunk: _Chunk,
    gap_start: int,
    spec: LanguageSpec,
    parent: str,
    container: str | None,
    seen: dict[tuple[str, str, str], int],
) -> Entity:
    node = chunk.node
    info = spec.classify(node, container)
    if info is None:
        # Keyed by its exact text; latin-1 maps bytes to str one to one, and fast.
        kind, name, owner = _ANONYMOUS, (node.text or b"").decode("latin-1"), ""
    else:
        kind, name, owner = info.kind, info.name, info.parent or ""
    shown_parent = owner or parent
    ident = (kind, owner, name)
    occurrence = seen.get(ident, 0)
    seen[ident] = occurrence + 1
    text = _join(lines, chunk.first, chunk.last + 1)
    gap = _join(lines, gap_start, chunk.first)
    row = node.start_point.row
    attached = len(_join(lines, chunk.first, row)) if row > chunk.first else 0
    fields = (kind, name, shown_parent, owner, occurrence, node.type, gap, text, attached)
    if info is None or info.body is None:
        return Entity(*fields)
    qualified = f"{shown_parent}.{name}" if shown_parent else name
    body_node = info.body

    def expand() -> Inside | None:
        try:
            inner = _inside(lines, body_node, chunk, spec, qualified, kind)
        except NotSplittable:
            # A one-line class or members sharing lines: merge the whole entity by lines.
            return None
        if inner is None:
            return None
        body, inner_start, inner_stop = inner
        return Inside(
            header=_join(lines, chunk.first, inner_start),
            body=body,
            footer=_join(lines, inner_stop, chunk.last + 1),
        )

    # Built once with its expander (not copied with `replace`, which cost more than
    # the rest of this function on files of many containers).
    return Entity(*fields, expand=_once(expand))


def _once(make: Callable[[], Inside | None]) -> Callable[[], Inside | None]:
    """`make`, run on the first call only; later calls return what it returned.

    What `functools.cache` does for a function of no arguments, without copying the
    function's name and attributes onto a wrapper, which cost more than the rest of
    `_entity` for each container.
    """
    made: list[Inside | None] = []

    def once() -> Inside | None:
        if not made:
            made.append(make())
        return made[0]

    return once


def _inside(
    lines: list[bytes],
    body: Node,
    chunk: _Chunk,
    spec: LanguageSpec,
    qualified: str,
    kind: str,
) -> tuple[Region, int, int] | None:
    """The container's inner rows as a region, or None if it has no separate inside."""
    opening = next((c for c in body.children if c.type in _OPEN and not c.is_named), None)
    closing = next(
        (c for c in reversed(body.children) if c.type in _CLOSE and not c.is_named), None
    )
    if opening is not None:
        inner_start = opening.end_point.row + 1
    else:
        # Python: the body follows the `:` that ends the header.
        colon = body.prev_sibling
        while colon is not None and colon.is_named:
            colon = colon.prev_sibling
        if colon is None:
            return None
        inner_start = colon.end_point.row + 1
    inner_stop = closing.start_point.row if closing is not None else _last_row(body) + 1
    if not chunk.first < inner_start <= inner_stop <= chunk.last + 1:
        return None
    region = _region(
        lines, list(body.named_children), inner_start, inner_stop, spec, qualified, kind
    )
    return region, inner_start, inner_stop


def extract(root: Node, lines: list[bytes], spec: LanguageSpec) -> Region:
    """Split a parsed file (its root node and its lines) into a top-level region.

    Raises `NotSplittable` when top-level statements share a line.
    """
    return _region(lines, list(root.named_children), 0, len(lines), spec, "", None)
