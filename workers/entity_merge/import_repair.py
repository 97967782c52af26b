"""Take out of a merged file the imported names the three-way merge of imports drops.

A text merge of two sides' import statements can bring back a name one side removed:
ours drops ``N`` from ``from units import kg, N``, theirs moves the same names into a
longer line, and the merged line, combined name by name, has ``N`` again. The import
map says which names the merge should import (:mod:`.imports`); when the merged file
imports exactly those plus a few more, a statement on its own lines that imports only
extra names is taken out whole, the rest are cut from statements listing several
names, and the file is checked again. Anything else (a
name missing, a statement left empty) is not repaired: the caller reports a conflict.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

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
    found = list(statements(spec, roots[3]))
    whole = _wholly_extra(found, extra, content)
    cut: dict[int, tuple[Node, set[int]]] = {}
    for bound, module, imported, statement in found:
        key = (bound, module, imported)
        if statement.start_byte in whole or not extra[key]:
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
    edits = [(start, end, b"") for start, end in _united(whole.values())]
    for statement, dropped in cut.values():
        rewritten = _drop(spec, statement, dropped)
        if rewritten is None:
            return None
        edits.append((statement.start_byte, statement.end_byte, rewritten))
    for start, end, text in sorted(edits, reverse=True):
        out = out[:start] + text + out[end:]
    return out


def _wholly_extra(
    found: list[tuple[str, str, str, Node]], extra: Counter[_Entry], content: bytes
) -> dict[int, tuple[int, int]]:
    """Statements on lines of their own whose every name is extra and imported by another
    statement too, taken out of `extra`: start byte -> the byte range of their lines.

    Two sides adding ``from m import a, b`` and ``from m import a`` leave ``a`` twice;
    dropping the statement that adds nothing keeps the fuller one as its side wrote
    it, where cutting ``a`` from the first list would split one import into two.
    """
    names: dict[int, tuple[Node, Counter[_Entry]]] = {}
    everywhere: Counter[_Entry] = Counter()
    for bound, module, imported, statement in found:
        _, keys = names.setdefault(statement.start_byte, (statement, Counter()))
        keys[(bound, module, imported)] += 1
        everywhere[(bound, module, imported)] += 1
    whole: dict[int, tuple[int, int]] = {}
    # Last first: of two statements that each add only the extra name, ours (placed
    # first where both sides added at one place) is the one kept.
    for start, (statement, keys) in reversed(names.items()):
        end = _line_end(content, statement.end_byte)
        own_lines = (start == 0 or content[start - 1 : start] == b"\n") and end is not None
        # Only a repeat: each of its names is imported from the same module by another
        # statement still standing. A name the merge drops altogether (one side moved
        # it, the other renamed it) keeps its last statement; the caller reports it.
        repeated = all(everywhere[key] > n for key, n in keys.items())
        if own_lines and end is not None and repeated and not keys - extra:
            extra.subtract(keys)
            everywhere.subtract(keys)
            whole[start] = _with_one_blank_line(content, start, end)
    return whole


def _with_one_blank_line(content: bytes, start: int, end: int) -> tuple[int, int]:
    """The lines `start:end` widened by the blank lines above them where blank lines
    follow them too (or by those below them at the start of the file, those above at
    its end), so that taking them out leaves one run of blank lines, not two.

    The merge puts blank lines between two sides' import statements when each side
    wrote one at the same place; dropping the second leaves those and its own.
    """
    below = end
    while (line_end := _blank_line_at(content, below)) is not None:
        below = line_end
    above = start
    while above > 0:
        line_start = content.rfind(b"\n", 0, above - 1) + 1
        if _blank_line_at(content, line_start) != above:
            break
        above = line_start
    if start == 0:
        return start, below
    if end >= len(content):
        return above, end
    return (above, end) if below > end else (start, end)


def _blank_line_at(content: bytes, at: int) -> int | None:
    """Where the line starting at `at` ends, its newline included, if it is empty."""
    for newline in (b"\n", b"\r\n"):
        if content[at : at + len(newline)] == newline:
            return at + len(newline)
    return None


def _united(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Byte ranges to delete, overlapping ones joined (two statements dropped around one
    blank line each claim it)."""
    joined: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if joined and start <= joined[-1][1]:
            joined[-1] = (joined[-1][0], max(end, joined[-1][1]))
        else:
            joined.append((start, end))
    return joined


def _line_end(content: bytes, end: int) -> int | None:
    """Where the line a statement ends at ends, its newline (LF or CRLF) included, when
    nothing but that newline follows the statement on it (or the file ends there)."""
    for newline in (b"\n", b"\r\n"):
        if content[end : end + len(newline)] == newline:
            return end + len(newline)
    return end if end == len(content) else None


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
