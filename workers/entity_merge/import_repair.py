"""Take out of a merged file the imported names the three-way merge of imports drops.

A text merge of two sides' import statements can bring back a name one side removed:
ours drops ``N`` from ``from units import kg, N``, theirs moves the same names into a
longer line, and the merged line, combined name by name, has ``N`` again. The import
map says which names the merge should import (:mod:`.imports`); when the merged file
imports exactly those plus a few more, each from a statement listing several names,
those few are cut from their lists and the file is checked again. Anything else (a
name missing, a statement left empty) is not repaired: the caller reports a conflict.
"""

from __future__ import annotations

from collections import Counter

from tree_sitter import Node

from .imports import CLASH, import_map, merged_value, statements
from .languages import LanguageSpec

__all__ = ["without_extra_imports"]

_Entry = tuple[str, str, str]  # (name bound, module, name imported)


def _extra(spec: LanguageSpec, roots: tuple[Node, Node, Node, Node]) -> Counter[_Entry] | None:
    """(name, module, imported) the merged file imports beyond the merge, or None."""
    b, o, t, m = (import_map(spec, r)[0] for r in roots)
    extra: Counter[_Entry] = Counter()
    for name in b.keys() | o.keys() | t.keys() | m.keys():
        expected = merged_value(b.get(name), o.get(name), t.get(name))
        if expected is CLASH:
            return None
        have, want = Counter(m.get(name, ())), Counter(expected or ())
        if want - have:
            return None  # a name is missing: nothing to cut, and adding is a guess
        for (module, imported), n in (have - want).items():
            extra[(name, module, imported)] += n
    return extra


def without_extra_imports(
    spec: LanguageSpec, roots: tuple[Node, Node, Node, Node], content: bytes
) -> bytes | None:
    """`content` without the names its imports hold beyond the merge, or None."""
    if spec.name_list is None:
        return None
    extra = _extra(spec, roots)
    if not extra:
        return None
    cut: dict[int, tuple[Node, set[int]]] = {}
    for bound, module, imported, statement in statements(spec, roots[3]):
        key = (bound, module, imported)
        if not extra[key]:
            continue
        listed = spec.name_list(statement)
        if listed is None:
            return None
        label = bound.removeprefix("export ") if statement.type == "export_statement" else bound
        _, dropped = cut.setdefault(statement.start_byte, (statement, set()))
        index = next(
            (n for n, name in enumerate(listed.bound) if name == label and n not in dropped), None
        )
        if index is None:
            return None
        dropped.add(index)
        extra[key] -= 1
    if +extra:
        return None
    out = content
    for start in sorted(cut, reverse=True):
        statement, dropped = cut[start]
        rewritten = _drop(spec, statement, dropped)
        if rewritten is None:
            return None
        out = out[: statement.start_byte] + rewritten + out[statement.end_byte :]
    return out


def _drop(spec: LanguageSpec, statement: Node, dropped: set[int]) -> bytes | None:
    """The statement's text without the listed names at `dropped`, in its own layout."""
    assert spec.name_list is not None
    listed = spec.name_list(statement)
    text = statement.text or b""
    if listed is None or len(dropped) >= len(listed.items) or len(listed.items) < 2:
        return None
    spans = listed.items
    separator = text[spans[0][1] : spans[1][0]]
    kept = [text[a:b] for n, (a, b) in enumerate(spans) if n not in dropped]
    return text[: spans[0][0]] + separator.join(kept) + text[spans[-1][1] :]
