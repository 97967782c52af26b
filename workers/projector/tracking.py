"""Knowing what a fold changed without encoding the whole state: recording collections.

The projector hands each fold a state whose collections (the dicts and lists the view
layout cuts out, see :mod:`bus.view_layout`) are :class:`TrackedDict` and
:class:`TrackedList`: a ``dict`` and a ``list`` in every respect, which also note the path
of every entry a fold reads or writes. A fold can only change an entry it has fetched
(``state.units[u]``, ``.get``, ``.setdefault``, iteration), so what was fetched is all a
flush needs to encode again; the flush compares each encoding with the last one written
and writes only what really changed. A fold that *replaces* a collection wholesale
(``state.queue = [...]``) or stores a new dict or entity is noted as a replacement, and the
flush rewrites that part whole and deletes what it no longer holds.

Entries are wrapped lazily: a dict a fold stores is kept as it is (the fold may still hold
and fill it) and becomes a :class:`TrackedDict` the next time it is read. What a fold must
not do is keep a plain copy (``dict(state.units)``) and change entries through it — the
change would be real but unseen; ``tests/projector/test_tracking.py`` checks every fold's
changes are seen on generated histories.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, SupportsIndex

from bus.view_layout import CHUNK_ITEMS, Coll, Node, Path


class Marks:
    """What may have changed in one view since it was last flushed."""

    __slots__ = ("paths", "replaced", "whole")

    def __init__(self) -> None:
        self.paths: set[Path] = set()
        """Entries or chunks that may have changed (encoded again, written if they did)."""
        self.replaced: set[Path] = set()
        """Collections, entities and lists to rewrite whole (stale values deleted)."""
        self.whole = False
        """The state itself was replaced (a fold returned a new one, or it is rebuilt)."""

    def clear(self) -> None:
        self.paths.clear()
        self.replaced.clear()
        self.whole = False


class TrackedDict(dict[str, Any]):
    """A collection of the view: notes every entry read or written (see module docstring)."""

    __slots__ = ("_coll", "_marker", "_marks", "_path")

    def __init__(self, marks: Marks, path: Path, coll: Coll, items: Any, marker: bool) -> None:
        super().__init__(items)
        self._marks = marks
        self._path = path
        self._coll = coll
        self._marker = marker  # an entry of a dict cut deeper: its size is a value too

    def _fetched(self, key: str, value: Any) -> Any:
        entry = self._coll.entry
        here = (*self._path, key)
        if isinstance(entry, Coll):
            if type(value) is not TrackedDict:
                value = TrackedDict(self._marks, here, entry, value, True)
                dict.__setitem__(self, key, value)
            return value
        if isinstance(entry, Node):
            adopt(self._marks, here, entry, value)
        self._marks.paths.add(here)
        return value

    def _stored(self, key: str, existed: bool) -> None:
        here = (*self._path, key)
        if self._coll.entry is None:
            self._marks.paths.add(here)
        else:
            self._marks.replaced.add(here)
        if self._marker and not existed:
            self._marks.paths.add(self._path)

    def _removed(self, key: str) -> None:
        self._stored(key, True)
        if self._marker:
            self._marks.paths.add(self._path)

    def __getitem__(self, key: str) -> Any:
        return self._fetched(key, dict.__getitem__(self, key))

    def get(self, key: str, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return self._fetched(key, dict.__getitem__(self, key))
        return default

    def __setitem__(self, key: str, value: Any) -> None:
        existed = dict.__contains__(self, key)
        dict.__setitem__(self, key, value)
        self._stored(key, existed)

    def setdefault(self, key: str, default: Any = None) -> Any:
        if not dict.__contains__(self, key):
            self[key] = default
        return self[key]

    def __delitem__(self, key: str) -> None:
        dict.__delitem__(self, key)
        self._removed(key)

    def pop(self, key: str, *default: Any) -> Any:
        if dict.__contains__(self, key):
            value = dict.pop(self, key)
            self._removed(key)
            return value
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[str, Any]:
        key, value = dict.popitem(self)
        self._removed(key)
        return key, value

    def clear(self) -> None:
        for key in list(dict.keys(self)):
            del self[key]

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other: Any) -> TrackedDict:  # type: ignore[override]
        self.update(other)
        return self

    def values(self) -> _Lazy:  # type: ignore[override]
        return _Lazy(self, lambda key, value: value)

    def items(self) -> _Lazy:  # type: ignore[override]
        return _Lazy(self, lambda key, value: (key, value))

    def copy(self) -> dict[str, Any]:
        return dict(self.items())

    def __or__(self, other: Any) -> dict[str, Any]:  # type: ignore[override]
        return self.copy() | dict(other)

    def __reduce__(self) -> Any:
        return (dict, (dict(self.items()),))


class _Lazy:
    """``values()`` / ``items()`` of a :class:`TrackedDict`: each entry is noted as it is
    handed out, so a scan that stops early notes only what it saw."""

    __slots__ = ("_mapping", "_shape")

    def __init__(self, mapping: TrackedDict, shape: Callable[[str, Any], Any]) -> None:
        self._mapping = mapping
        self._shape = shape

    def __iter__(self) -> Iterator[Any]:
        mapping = self._mapping
        for key in list(dict.keys(mapping)):
            if dict.__contains__(mapping, key):
                yield self._shape(key, mapping[key])

    def __len__(self) -> int:
        return len(self._mapping)

    def __contains__(self, item: Any) -> bool:
        return any(item == candidate for candidate in self)

    def __reversed__(self) -> Iterator[Any]:
        items: list[Any] = list(self)
        yield from reversed(items)


class TrackedList(list[Any]):
    """A list field of the view, cut in chunks: notes the chunks a fold reads or changes."""

    __slots__ = ("_marks", "_path")

    def __init__(self, marks: Marks, path: Path, items: Iterable[Any]) -> None:
        super().__init__(items)
        self._marks = marks
        self._path = path

    def _chunk(self, index: int) -> None:
        self._marks.paths.add((*self._path, index // CHUNK_ITEMS))

    def _span(self, start: int, stop: int) -> None:
        for chunk in range(start // CHUNK_ITEMS, (max(stop, start + 1) - 1) // CHUNK_ITEMS + 1):
            self._marks.paths.add((*self._path, chunk))

    def _reshaped(self) -> None:
        self._marks.replaced.add(self._path)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            start, stop, _ = index.indices(len(self))
            self._span(start, stop)
        else:
            self._chunk(index if index >= 0 else len(self) + index)
        return list.__getitem__(self, index)

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, slice):
            self._reshaped()
        else:
            self._chunk(index if index >= 0 else len(self) + index)
        list.__setitem__(self, index, value)

    def __iter__(self) -> Iterator[Any]:
        for index in range(len(self)):
            if index % CHUNK_ITEMS == 0:
                self._chunk(index)
            if index >= len(self):
                return
            yield list.__getitem__(self, index)

    def __reversed__(self) -> Iterator[Any]:
        for index in range(len(self) - 1, -1, -1):
            if index % CHUNK_ITEMS == CHUNK_ITEMS - 1 or index == len(self) - 1:
                self._chunk(index)
            yield list.__getitem__(self, index)

    def append(self, item: Any) -> None:
        list.append(self, item)
        self._chunk(len(self) - 1)

    def extend(self, items: Iterable[Any]) -> None:
        start = len(self)
        list.extend(self, items)
        self._span(start, len(self))

    def __iadd__(self, items: Iterable[Any]) -> TrackedList:  # type: ignore[misc]
        self.extend(items)
        return self

    def pop(self, index: SupportsIndex = -1) -> Any:
        position = int(index) if int(index) >= 0 else len(self) + int(index)
        if position == len(self) - 1:
            self._chunk(position)
        else:
            self._reshaped()
        return list.pop(self, index)

    def _reshaping(name: str) -> Any:  # type: ignore[misc]
        method = getattr(list, name)

        def reshaping(self: TrackedList, *args: Any, **kwargs: Any) -> Any:
            self._reshaped()
            return method(self, *args, **kwargs)

        reshaping.__name__ = name
        return reshaping

    insert = _reshaping("insert")
    remove = _reshaping("remove")
    clear = _reshaping("clear")
    sort = _reshaping("sort")
    reverse = _reshaping("reverse")
    __delitem__ = _reshaping("__delitem__")
    __imul__ = _reshaping("__imul__")

    def copy(self) -> list[Any]:
        return list(iter(self))

    def __add__(self, other: Any) -> list[Any]:
        return list(iter(self)) + list(other)

    def __reduce__(self) -> Any:
        return (list, (list(iter(self)),))


def adopt(marks: Marks, path: Path, node: Node, obj: Any) -> None:
    """Give the collections of ``obj`` (a Struct laid out as ``node``, at ``path``) their
    recording form; a collection found in plain form was replaced since it was last seen:
    noted for a whole rewrite."""
    for attr, coll in node.colls.items():
        current = getattr(obj, attr)
        if type(current) is not TrackedDict:
            setattr(obj, attr, TrackedDict(marks, (*path, attr), coll, current, False))
            marks.replaced.add((*path, attr))
    for attr in node.lists:
        current = getattr(obj, attr)
        if type(current) is not TrackedList:
            setattr(obj, attr, TrackedList(marks, (*path, attr), current))
            marks.replaced.add((*path, attr))
    for attr, sub in node.subs.items():
        adopt(marks, (*path, attr), sub, getattr(obj, attr))
