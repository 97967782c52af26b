"""Three-way merge of a TOML file by table, key and array element.

Two sides that each edit a different key of one table, add different keys, or each
remove (or add) their own entries of one array — ``pending = ["a", "b"]`` cleared to
``["b"]`` on one side and ``["a"]`` on the other — combine; a key both sides set to
different values, a key one side deleted and the other changed, or one array element both
sides replaced differently, is a conflict named after the key.

The merge is done twice, on purpose:

* on the data (``tomllib``): what the merged file must mean;
* on the text (:mod:`.languages.toml`'s statements): the file itself, every statement
  neither side touched kept byte for byte, each side's changed statements taken as that
  side wrote them, an array both sides changed rewritten from its elements' own text in
  the style of our side (one line or one element per line).

A clean text merge is written only if it parses and means exactly what the data merge
says; otherwise the file is merged by lines, and if that does not hold either, it is
handed back whole as a conflict. So a clean TOML merge always parses (the reparse check).
"""

from __future__ import annotations

import tomllib
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from .languages.toml import Document, NotToml, Section, Statement, array_of, canon, parse
from .line_merge import Clash, render
from .ordering import Reordered, merged_order
from .regions import Merger
from .result import ConflictHunk, ConflictReason, EntityConflict, MergeResult
from .toml_values import MISSING, merge_list, merge_value, same_value

__all__ = ["MISSING", "merge_list", "merge_toml", "merge_value"]

LANGUAGE = "toml"


# -- the text ----------------------------------------------------------------------------


@dataclass
class _Text:
    marker_size: int
    conflicts: list[EntityConflict] = field(default_factory=list)

    def lines(self, base: str, ours: str, theirs: str, *, kind: str, name: str) -> str:
        merger = Merger(self.marker_size)
        out = merger.lines(base.encode(), ours.encode(), theirs.encode(), kind=kind, name=name)
        self.conflicts.extend(merger.conflicts)
        return out.decode()

    def clash(self, base: str, ours: str, theirs: str, *, kind: str, name: str) -> str:
        reason: ConflictReason = "both-modified"
        if base and not ours:
            reason = "delete-modify"
        elif base and not theirs:
            reason = "modify-delete"
        elif not base:
            reason = "both-added"
        merged = render(
            [Clash(base=_piece(base), ours=_piece(ours), theirs=_piece(theirs))],
            label=f"{kind} {name}",
            marker_size=self.marker_size,
        )
        hunk = ConflictHunk(base=base, ours=ours, theirs=theirs)
        self.conflicts.append(EntityConflict(kind=kind, name=name, reason=reason, hunks=(hunk,)))
        return merged.content.decode()

    def document(self, base: Document, ours: Document, theirs: Document) -> str:
        by = [{s.key: s for s in doc.sections} for doc in (base, ours, theirs)]
        keys = [[s.key for s in doc.sections] for doc in (base, ours, theirs)]
        keep = {k for k in {*keys[1], *keys[2]} if _survives(*(m.get(k) for m in by))}
        order = _order(keys[0], keys[1], keys[2], keep)
        parts = [self.section(*(m.get(k) for m in by)) for k in order]
        parts.append(self.lines(base.tail, ours.tail, theirs.tail, kind="comment", name="end"))
        return _concat(parts)

    def section(self, base: Section | None, ours: Section | None, theirs: Section | None) -> str:
        if ours is None or theirs is None:
            kept = ours or theirs
            assert kept is not None
            if base is None:
                return kept.text
            name = kept.name()
            return self.clash(
                base.text, ours.text if ours else "", theirs.text if theirs else "",
                kind="table", name=name,
            )  # fmt: skip
        name = ours.name()
        parts = []
        if ours.header is not None and theirs.header is not None:
            head = base.header if base is not None else None
            parts.append(self.statement(head, ours.header, theirs.header, name))
        by = [{i.key: i for i in s.items} if s else {} for s in (base, ours, theirs)]
        keys = [[i.key for i in s.items] if s else [] for s in (base, ours, theirs)]
        keep = {k for k in {*keys[1], *keys[2]} if _survives(*(m.get(k) for m in by))}
        for key in _order(keys[0], keys[1], keys[2], keep):
            b, o, t = (m.get(key) for m in by)
            parts.append(self.statement(b, o, t, f"{name} {'.'.join(key)}".strip()))
        return _concat(parts)

    def statement(
        self, base: Statement | None, ours: Statement | None, theirs: Statement | None, name: str
    ) -> str:
        some = ours or theirs or base
        kind = "key" if some is not None and some.key else "header"
        if ours is None or theirs is None:
            kept = ours or theirs
            assert kept is not None
            if base is None:
                return kept.text
            o, t = (ours.text if ours else ""), (theirs.text if theirs else "")
            return self.clash(base.text, o, t, kind=kind, name=name)
        if ours.text == theirs.text or (base is not None and theirs.text == base.text):
            return ours.text
        if base is not None and ours.text == base.text:
            return theirs.text
        if base is None:
            if same_value(ours.value, theirs.value):
                return ours.text
            return self.clash("", ours.text, theirs.text, kind=kind, name=name)
        if all(isinstance(s.value, list) for s in (base, ours, theirs)):
            combined = self.array(base, ours, theirs, name)
            if combined is not None:
                return combined
        if same_value(ours.value, theirs.value) and kind == "key":
            lines = Merger(self.marker_size)
            out = lines.lines(
                base.text.encode(), ours.text.encode(), theirs.text.encode(), kind=kind, name=name
            )
            return ours.text if lines.conflicts else out.decode()
        return self.lines(base.text, ours.text, theirs.text, kind=kind, name=name)

    def array(self, base: Statement, ours: Statement, theirs: Statement, name: str) -> str | None:
        """An array both sides changed, merged by element; ``None`` when it cannot be."""
        wanted = merge_list(base.value, ours.value, theirs.value)
        if wanted is None:
            return None
        plain = Merger(self.marker_size)
        out = plain.lines(
            base.body.encode(), ours.body.encode(), theirs.body.encode(), kind="key", name=name
        ).decode()
        body = out if not plain.conflicts and _reads_as(out, wanted) else None
        body = body or _rendered(ours, wanted, (ours, theirs, base))
        if body is None:
            return None
        lead = self.lines(base.lead, ours.lead, theirs.lead, kind="comment", name=name)
        return lead + body


K = TypeVar("K", bound=Hashable)


def _order(base: list[K], ours: list[K], theirs: list[K], keep: set[K]) -> list[K]:
    """:func:`.matching.merged_order` (written for entity keys; any hashable key does)."""
    order: Any = merged_order(cast(Any, base), cast(Any, ours), cast(Any, theirs), cast(Any, keep))
    return cast(list[K], order)


def _reads_as(body: str, wanted: list[Any]) -> bool:
    try:
        node: Any = tomllib.loads(body)
    except tomllib.TOMLDecodeError:
        return False
    while isinstance(node, dict) and len(node) == 1:
        node = next(iter(node.values()))
    return same_value(node, wanted)


def _rendered(ours: Statement, wanted: list[Any], sources: tuple[Statement, ...]) -> str | None:
    """``ours`` with its array holding ``wanted``, each element as one side wrote it."""
    layout = array_of(ours.body)
    if layout is None:
        return None
    pool: dict[Any, list[Any]] = {}
    for source in sources:
        found = layout if source is ours else array_of(source.body)
        for element in found.elements if found is not None else ():
            pool.setdefault(canon(element.value), []).append(element)
    elements = []
    for value in wanted:
        candidates = pool.get(canon(value))
        if not candidates:
            return None
        elements.append(candidates.pop(0) if len(candidates) > 1 else candidates[0])
    body = ours.body
    head, rest = body[: layout.open + 1], body[layout.close :]
    if not layout.multiline(body):
        inner = body[layout.open + 1 : layout.close]
        left = inner[: len(inner) - len(inner.lstrip())] if elements else ""
        right = inner[len(inner.rstrip()) :] if elements else ""
        return head + left + ", ".join(e.text for e in elements) + right + rest
    line_start = body.rfind("\n", 0, layout.close) + 1
    closing = body[line_start:] if not body[line_start : layout.close].strip() else "\n" + rest
    first = layout.elements[0] if layout.elements else None
    indent = "    "
    if first is not None:
        at = body.find(first.text, layout.open)
        start = body.rfind("\n", 0, at) + 1
        indent = body[start:at] if not body[start:at].strip() else indent
    lines = [head.rstrip(" \t") + "\n"]
    for element in elements:
        lines.extend(f"{indent}{comment}\n" for comment in element.lead)
        trailing = f" {element.comment}" if element.comment else ""
        lines.append(f"{indent}{element.text},{trailing}\n")
    lines.extend(f"{indent}{comment}\n" for comment in layout.tail)
    return "".join(lines) + closing.lstrip("\n")


def _survives(base: Any, ours: Any, theirs: Any) -> bool:
    """Whether a section or statement is in the result (as itself or as a conflict)."""
    if base is None or (ours is not None and theirs is not None):
        return ours is not None or theirs is not None
    if ours is None and theirs is None:
        return False
    kept = ours if ours is not None else theirs
    return bool(kept.text != base.text)  # deleted on one side: gone unless the other changed it


def _piece(text: str) -> tuple[bytes, ...]:
    return (text.encode(),) if text else ()


def _concat(parts: list[str]) -> str:
    out = ""
    for part in parts:
        if part and out and not out.endswith("\n"):
            out += "\n"
        out += part
    return out


# -- the file ----------------------------------------------------------------------------


def merge_toml(base: bytes, ours: bytes, theirs: bytes, path: str, marker_size: int) -> MergeResult:
    """Merge a TOML file's three versions (see the module docstring)."""
    if ours == theirs or theirs == base:
        return MergeResult(content=ours, conflicts=(), strategy="entity", language=LANGUAGE)
    if ours == base:
        return MergeResult(content=theirs, conflicts=(), strategy="entity", language=LANGUAGE)
    texts: list[str] = []
    docs: list[Document] = []
    for side, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        try:
            text = data.decode("utf-8")
            docs.append(parse(text))
        except (UnicodeDecodeError, NotToml) as exc:
            why = "is not UTF-8" if isinstance(exc, UnicodeDecodeError) else "does not parse"
            note = f"{side} {why} as TOML; merged by lines"
            return _checked_lines(base, ours, theirs, path, marker_size, None, [], note=note)
        texts.append(text)
    data_conflicts: list[str] = []
    sides = [tomllib.loads(t) for t in texts]
    wanted = merge_value(sides[0], sides[1], sides[2], "", data_conflicts)
    merged = _Text(marker_size)
    try:
        content = merged.document(*docs)
    except Reordered:
        return _checked_lines(base, ours, theirs, path, marker_size, wanted, data_conflicts)
    if merged.conflicts:
        return MergeResult(
            content=content.encode(),
            conflicts=tuple(merged.conflicts),
            strategy="entity",
            language=LANGUAGE,
        )
    if not data_conflicts and _means(content, wanted):
        return MergeResult(
            content=content.encode(), conflicts=(), strategy="entity", language=LANGUAGE
        )
    return _checked_lines(base, ours, theirs, path, marker_size, wanted, data_conflicts)


def _means(content: str, wanted: Any) -> bool:
    try:
        return same_value(tomllib.loads(content), wanted)
    except tomllib.TOMLDecodeError:
        return False


def _parses(content: str) -> bool:
    try:
        tomllib.loads(content)
    except tomllib.TOMLDecodeError:
        return False
    return True


def _lines(
    base: bytes, ours: bytes, theirs: bytes, path: str, marker_size: int, note: str
) -> MergeResult:
    merger = Merger(marker_size)
    content = merger.lines(base, ours, theirs, kind="file", name=path)
    return MergeResult(
        content=content,
        conflicts=tuple(merger.conflicts),
        strategy="line",
        language=LANGUAGE,
        note=note,
    )


def _checked_lines(
    base: bytes,
    ours: bytes,
    theirs: bytes,
    path: str,
    marker_size: int,
    wanted: Any,
    data_conflicts: list[str],
    *,
    note: str = "the statement merge did not hold; merged by lines",
) -> MergeResult:
    """The line merge, if it is clean, parses, and means what the data merge says
    (``wanted``; ``None``: no data merge, a side did not parse); else the whole file as
    one conflict, naming the keys that collide."""
    line = _lines(base, ours, theirs, path, marker_size, note)
    if not line.clean:
        return line
    text = line.content.decode("utf-8", "replace")
    parses = _parses(text)
    if not data_conflicts and parses and (wanted is None or _means(text, wanted)):
        return line
    reason: ConflictReason = "both-modified"
    if data_conflicts:
        why = f"keys collide: {', '.join(data_conflicts)}"
    elif not parses:
        why, reason = "does not parse", "result-unparseable"
    else:
        why = "the lines merge into something neither side meant"
    whole = _Text(marker_size)
    content = whole.clash(
        base.decode("utf-8", "replace"),
        ours.decode("utf-8", "replace"),
        theirs.decode("utf-8", "replace"),
        kind="file",
        name=f"{path}: {why}",
    )
    conflict = EntityConflict(kind="file", name=path, reason=reason, hunks=whole.conflicts[0].hunks)
    return MergeResult(
        content=content.encode(),
        conflicts=(conflict,),
        strategy="line",
        language=LANGUAGE,
        note=f"{note}; {why}",
    )
