"""Three-way merge of TOML *data* (what :mod:`.toml_merge`'s merged file must mean): by
table, key and array element, a conflict named after its key. Split from
:mod:`.toml_merge`, which merges the text and checks it means what this says."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .languages.data_tree import same
from .languages.toml import canon
from .line_merge import Clash, Stable, merge3

MISSING: Any = object()
"""A key one version does not have."""


def merge_value(base: Any, ours: Any, theirs: Any, path: str, conflicts: list[str]) -> Any:
    """The merge of one value's three versions (:data:`MISSING` when absent); each key
    path that cannot be merged is appended to ``conflicts``."""
    if same_value(ours, theirs) or same_value(theirs, base):
        return ours
    if same_value(ours, base):
        return theirs
    if all(isinstance(v, dict) for v in (base, ours, theirs)):
        merged: dict[str, Any] = {}
        for key in [*ours, *(k for k in theirs if k not in ours)]:
            value = merge_value(
                base.get(key, MISSING),
                ours.get(key, MISSING),
                theirs.get(key, MISSING),
                f"{path}.{key}" if path else key,
                conflicts,
            )
            if value is not MISSING:
                merged[key] = value
        return merged
    if all(isinstance(v, list) for v in (base, ours, theirs)):
        if _tables(base, ours, theirs):  # [[x]] entries: matched by position, as in the text
            return [
                merge_value(b, o, t, f"{path}[{n}]", conflicts)
                for n, (b, o, t) in enumerate(zip(base, ours, theirs, strict=True))
            ]
        combined = merge_list(base, ours, theirs)
        if combined is not None:
            return combined
    conflicts.append(path or "(the whole file)")
    return ours


def _tables(*arrays: list[Any]) -> bool:
    """Three arrays of tables of one length."""
    return len({len(a) for a in arrays}) == 1 and all(
        isinstance(v, dict) for a in arrays for v in a
    )


def same_value(a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING:
        return a is b
    return same(a, b)


def merge_list(base: list[Any], ours: list[Any], theirs: list[Any]) -> list[Any] | None:
    """Merge an array element by element (``None``: a conflict).

    Where both sides changed the same stretch, an element either side removed is gone and
    what each added is kept (ours first, one copy of an addition both made); only a base
    element both sides replaced, each with something else, is a conflict.
    """
    values: dict[bytes, Any] = {}

    def tokens(items: list[Any]) -> list[bytes]:
        out = []
        for item in items:
            token = repr(canon(item)).encode() + b"\n"
            values.setdefault(token, item)
            out.append(token)
        return out

    merged: list[bytes] = []
    for chunk in merge3(tokens(base), tokens(ours), tokens(theirs)):
        if isinstance(chunk, Stable):
            merged.extend(chunk.lines)
            continue
        part = _clash(chunk)
        if part is None:
            return None
        merged.extend(part)
    return [values[token] for token in merged]


def _clash(chunk: Clash) -> list[bytes] | None:
    base, ours, theirs = Counter(chunk.base), Counter(chunk.ours), Counter(chunk.theirs)
    removed_o, removed_t = base - ours, base - theirs
    added_o = [t for t in chunk.ours if t not in base]
    added_t = [t for t in chunk.theirs if t not in base]
    if (removed_o & removed_t) and added_o and added_t and added_o != added_t:
        return None  # one element replaced twice, differently
    gone = removed_o | removed_t
    kept: list[bytes] = []
    for token in chunk.base:
        if gone[token]:
            gone[token] -= 1
        else:
            kept.append(token)
    both = Counter(added_o)
    extra = []
    for token in added_t:
        if both[token]:
            both[token] -= 1
        else:
            extra.append(token)
    return kept + added_o + extra
