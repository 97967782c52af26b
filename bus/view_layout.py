"""The partitioned view layout: where a projection's state is cut into small KV values.

A state is a tree of msgspec Structs, dicts and lists. Its *layout*, derived once from the
state's type (never from its values, so every writer and reader cuts it the same way), says
where the cuts are:

* each dict field of the state is a **collection**: every entry is a value of its own, under
  a key naming the entry. An entry that is itself a dict is a collection one level deeper
  (open findings per unit, per finding key); an entry that is a Struct holding collections
  of entities (a slice and its units) has its own small value, the *head*, and its
  entity collections are cut below it the same way;
* each list field of the state is cut into **chunks** of :data:`CHUNK_ITEMS` items;
* a Struct field of the state that holds collections is cut like the state itself;
* everything else — counters, small nested values, a unit's own short lists — stays in the
  value of the node it belongs to.

So no value grows with the number of units, findings, slices or events: each holds one
entity, one chunk, or a node's fixed fields (and a value that is nonetheless too big for
one message is split by :mod:`bus.views`).

Keys are ``view.<project>.<fold>`` (the state's head: the *summary*) followed by one token
per step of the path: a field's name, a chunk's index, or an entry's key — as it is when it
is a plain token (``[A-Za-z0-9_-]``, at most 64 characters, like unit ids), else ``=``
and a digest of it (finding keys hold ``:`` and ``|``, which a KV key may not). The entry's
own keys travel in its value (``k``), so a reader never has to undo a digest.
"""

from __future__ import annotations

import hashlib
import re
from collections import abc
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Annotated, Any, NamedTuple, get_args, get_origin

import msgspec

VIEW_PREFIX = "view"
CHUNK_ITEMS = 64
"""Items of a list field per chunk."""

Path = tuple[str | int, ...]
"""Steps from a state's root: field names, entry keys, chunk indexes."""

_PLAIN = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
_encoder = msgspec.json.Encoder(order="deterministic")


@lru_cache(maxsize=65_536)
def token(key: str) -> str:
    """One KV key token for an entry key (see the module docstring)."""
    if _PLAIN.match(key):
        return key
    return "=" + hashlib.sha256(key.encode()).hexdigest()[:32]


def view_prefix(project: str, fold: str) -> str:
    return f"{VIEW_PREFIX}.{project}.{fold}"


@dataclass(eq=False)
class Node:
    """A Struct with a value of its own (its head) and collections cut below it."""

    cls: type
    inline: dict[str, str]
    """Attribute -> JSON name of every field kept in the head."""
    colls: dict[str, Coll] = field(default_factory=dict)
    lists: set[str] = field(default_factory=set)
    subs: dict[str, Node] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    """Attribute -> JSON name of every field."""

    @property
    def sized(self) -> list[str]:
        """Fields whose length the head records (collections and chunked lists)."""
        return [*self.colls, *sorted(self.lists)]


@dataclass(eq=False)
class Coll:
    """A dict cut into one value per entry; ``entry`` says what an entry is: a leaf
    (``None``), a dict cut a level deeper (:class:`Coll`) or a Struct with a head
    (:class:`Node`)."""

    entry: Node | Coll | None


# The layout needs each field's kind one level deep: a dict (and its value's kind), a
# list, a Struct, or anything else. msgspec.inspect.type_info would describe every type
# reachable from the state, each with its annotations evaluated, and the commands that
# read views (``loopbus status``) paid about 50 ms of their start-up for it.
_DICTS: tuple[Any, ...] = (dict, abc.Mapping, abc.MutableMapping)
_LISTS: tuple[Any, ...] = (list, abc.Sequence, abc.MutableSequence)


def _kind(kind: Any) -> tuple[str, Any]:
    """("dict", value type), ("list", None), ("struct", class) or ("other", None).

    Written for the forms the folds' states use (Annotated, NewType, dict and list
    types, Structs, scalars); tests/bus/test_view_layout.py holds every
    fold's layout to the one msgspec.inspect derives, so a fold that starts using a
    form this does not know (Final, a generic Struct, a TypeVar) fails there first.
    """
    while True:
        if get_origin(kind) is Annotated:
            if any(map(_documented, get_args(kind)[1:])):
                return "other", None  # msgspec.inspect wraps it as Metadata: kept whole
            kind = get_args(kind)[0]
        elif hasattr(kind, "__supertype__"):  # a NewType encodes as its base
            kind = kind.__supertype__
        else:
            break
    origin = get_origin(kind) or kind
    if origin in _DICTS:
        args = get_args(kind)
        return "dict", args[1] if len(args) == 2 else Any
    if origin in _LISTS:
        return "list", None
    if isinstance(origin, type) and issubclass(origin, msgspec.Struct):
        return "struct", origin
    return "other", None


def _documented(meta: Any) -> bool:
    return isinstance(meta, msgspec.Meta) and any(
        getattr(meta, attr) is not None
        for attr in ("title", "description", "examples", "extra_json_schema", "extra")
    )


def _is_entity(kind: Any) -> bool:
    return _kind(kind)[0] in ("struct", "dict")


def _node(cls: type, top: bool) -> Node:
    node = Node(cls=cls, inline={})
    for f in msgspec.structs.fields(cls):
        node.names[f.name] = f.encode_name
        kind, inner = _kind(f.type)
        if kind == "dict" and (top or _is_entity(inner)):
            node.colls[f.name] = _coll(inner)
        elif kind == "list" and top:
            node.lists.add(f.name)
        elif kind == "struct" and top and _cut(sub := _node(inner, True)):
            node.subs[f.name] = sub
        else:
            node.inline[f.name] = f.encode_name
    return node


def _coll(value: Any) -> Coll:
    kind, inner = _kind(value)
    if kind == "dict":
        return Coll(entry=_coll(inner))
    if kind == "struct":
        node = _node(inner, False)
        return Coll(entry=node if _cut(node) else None)
    return Coll(entry=None)


def _cut(node: Node) -> bool:
    return bool(node.colls or node.lists or node.subs)


def layout_of(state_type: type) -> Node:
    """The layout of a state type (a msgspec Struct), derived once per type."""
    found = _LAYOUTS.get(state_type)
    if found is None:
        found = _LAYOUTS[state_type] = _layout(state_type)
    return found


_LAYOUTS: dict[type, Node] = {}


def _layout(state_type: type) -> Node:
    kind, cls = _kind(state_type)
    assert kind == "struct", f"{state_type} is not a msgspec Struct"
    return _node(cls, True)


# -- where a path leads ------------------------------------------------------------------


@dataclass(frozen=True)
class Spot:
    """What stands at a path, and its key tokens.

    ``kind`` is ``head`` (a node: the state, or a Struct field cut like it), ``entry`` (a
    collection entry: ``layout`` is its :class:`Node`, its :class:`Coll` when it is a dict
    cut a level deeper, ``None`` for a leaf), ``chunk``, or — not values themselves —
    ``coll`` and ``list``. ``keys`` are the entry keys along the path (a value's ``k``)."""

    kind: str
    layout: Node | Coll | None
    keys: tuple[str, ...] = ()
    tokens: tuple[str, ...] = ()


def locate(root: Node, path: Path) -> Spot:
    """What ``path`` names in a state with layout ``root``.

    (Walked with plain locals and one :class:`Spot` at the end: the flush locates every
    changed entry, and a frozen dataclass made at each step was a third of its time.)"""
    kind: str = "head"
    at: Node | Coll | None = root
    keys: list[str] = []
    tokens: list[str] = []
    for step in path:
        if kind == "coll":
            assert isinstance(at, Coll) and isinstance(step, str)
            keys.append(step)
            tokens.append(token(step))
            kind, at = "entry", at.entry
        elif kind == "list":
            tokens.append(str(step))
            kind, at = "chunk", None
        elif isinstance(at, Node) and isinstance(step, str):
            tokens.append(step)
            if step in at.colls:
                kind, at = "coll", at.colls[step]
            elif step in at.subs:
                kind, at = "head", at.subs[step]
            elif step in at.lists:
                kind, at = "list", None
            else:
                raise KeyError(f"{step!r} is not cut out of {at.cls.__name__}")
        elif isinstance(at, Coll) and isinstance(step, str):  # a dict entry's own entries
            keys.append(step)
            tokens.append(token(step))
            kind, at = "entry", at.entry
        else:
            raise KeyError(f"nothing is cut at {step!r} of {path!r}")
    return Spot(kind, at, tuple(keys), tuple(tokens))


def key_of(prefix: str, tokens: tuple[str, ...]) -> str:
    return ".".join((prefix, *tokens)) if tokens else prefix


# -- values -------------------------------------------------------------------------------


def head_body(
    node: Node,
    obj: Any,
    keys: tuple[str, ...],
    seq: int | None = None,
    leaves: dict[str, int] | None = None,
) -> bytes:
    """A node's head: its inline fields, the sizes of what is cut below it, and where it
    is (``seq`` only in a state's summary).

    The size of a collection cut more than one level deep counts its bottom entries (open
    findings, not units with findings): the writer keeps that count as it goes
    (``leaves``); without it they are counted here."""
    inline = {node.inline[a]: getattr(obj, a) for a in node.inline}
    sizes = {}
    for attr in node.sized:
        coll = node.colls.get(attr)
        if coll is not None and isinstance(coll.entry, Coll):
            known = leaves.get(attr) if leaves is not None else None
            sizes[node.names[attr]] = (
                known if known is not None else count(coll, getattr(obj, attr))
            )
        else:
            sizes[node.names[attr]] = len(getattr(obj, attr))
    where = b'"seq":%d,' % seq if seq is not None else b'"k":%s,' % _encoder.encode(keys)
    return where + b'"n":%s,"v":%s' % (_encoder.encode(sizes), _encoder.encode(inline))


def count(coll: Coll, mapping: dict[str, Any]) -> int:
    """Bottom entries of a collection (its entries, unless they are dicts cut deeper)."""
    if not isinstance(coll.entry, Coll):
        return len(mapping)
    inner = coll.entry
    return sum(count(inner, dict.__getitem__(mapping, key)) for key in mapping)


def entry_body(value: Any, keys: tuple[str, ...]) -> bytes:
    return b'"k":%s,"v":%s' % (_encoder.encode(keys), _encoder.encode(value))


def marker_body(size: int, keys: tuple[str, ...]) -> bytes:
    """A dict entry cut a level deeper: where it is and how many entries it holds."""
    return b'"k":%s,"n":%d' % (_encoder.encode(keys), size)


def chunk_body(items: list[Any], index: int) -> bytes:
    return b'"i":%d,"v":%s' % (index, _encoder.encode(items))


class _Missing:
    pass


_MISSING: Any = _Missing()


def resolve(state: Any, path: Path) -> Any:
    """The object at ``path`` in ``state`` (``_MISSING`` when an entry is gone), read
    without touching any recording collection (see the projector's tracking)."""
    current = state
    for step in path:
        if isinstance(current, dict):
            current = dict.get(current, step, _MISSING)
            if current is _MISSING:
                return _MISSING
        elif isinstance(step, int):
            return current  # a chunk: the list it belongs to
        else:
            current = getattr(current, step)
    return current


class Piece(NamedTuple):
    """One value of a view: where it stands, its key tokens, its body (the stored value
    without its flush number), and — for the entry of a dict cut a level deeper whose own
    entries are the bottom ones — how many entries it holds."""

    path: Path
    tokens: tuple[str, ...]
    body: bytes
    holds: int | None = None


def piece_at(root: Node, state: Any, path: Path, seq: int) -> tuple[Spot, Piece | None]:
    """What stands at ``path`` in ``state`` now (``None``: nothing any more)."""
    spot = locate(root, path)
    value = resolve(state, path)
    if value is _MISSING or spot.kind in ("coll", "list"):
        return spot, None  # gone, or a collection (which has no value of its own)
    layout = spot.layout
    if spot.kind == "chunk":
        index = int(path[-1])
        items = list(value[index * CHUNK_ITEMS : (index + 1) * CHUNK_ITEMS])
        return spot, Piece(path, spot.tokens, chunk_body(items, index)) if items else None
    if isinstance(layout, Node):
        body = head_body(layout, value, spot.keys, seq if not path else None)
        return spot, Piece(path, spot.tokens, body)
    if isinstance(layout, Coll):
        holds = len(value) if not isinstance(layout.entry, Coll) else None
        return spot, Piece(path, spot.tokens, marker_body(len(value), spot.keys), holds)
    assert spot.kind == "entry", f"{path!r} names a {spot.kind}, which has no value"
    return spot, Piece(path, spot.tokens, entry_body(value, spot.keys))


def pieces(root: Node, state: Any, seq: int, path: Path = ()) -> Iterator[Piece]:
    """Every value at and below ``path`` in ``state`` (the whole view, or the part of it
    that was replaced)."""
    value = resolve(state, path)
    if value is not _MISSING:
        yield from _below(locate(root, path), value, path, seq)


def _below(spot: Spot, value: Any, path: Path, seq: int) -> Iterator[Piece]:
    layout, tokens, keys = spot.layout, spot.tokens, spot.keys
    if spot.kind == "list":
        for index in range((len(value) + CHUNK_ITEMS - 1) // CHUNK_ITEMS):
            items = list(value[index * CHUNK_ITEMS : (index + 1) * CHUNK_ITEMS])
            yield Piece((*path, index), (*tokens, str(index)), chunk_body(items, index))
    elif spot.kind == "chunk":
        index = int(path[-1])
        items = list(value[index * CHUNK_ITEMS : (index + 1) * CHUNK_ITEMS])
        if items:
            yield Piece(path, tokens, chunk_body(items, index))
    elif isinstance(layout, Coll):
        if spot.kind == "entry":
            holds = len(value) if not isinstance(layout.entry, Coll) else None
            yield Piece(path, tokens, marker_body(len(value), keys), holds)
        for key in value:
            child = Spot("entry", layout.entry, (*keys, key), (*tokens, token(key)))
            yield from _below(child, dict.__getitem__(value, key), (*path, key), seq)
    elif isinstance(layout, Node):
        yield Piece(path, tokens, head_body(layout, value, keys, seq if not path else None))
        for attr, coll in layout.colls.items():
            child = Spot("coll", coll, keys, (*tokens, attr))
            yield from _below(child, getattr(value, attr), (*path, attr), seq)
        for attr in sorted(layout.lists):
            child = Spot("list", None, keys, (*tokens, attr))
            yield from _below(child, getattr(value, attr), (*path, attr), seq)
        for attr, sub in layout.subs.items():
            child = Spot("head", sub, keys, (*tokens, attr))
            yield from _below(child, getattr(value, attr), (*path, attr), seq)
    else:
        yield Piece(path, tokens, entry_body(value, keys))
