"""Three-way merge of a JSON or YAML file by key and element.

Two sides that set different keys, add different keys or tables, or add and remove their
own elements of one list combine; a key both sides set to different values, a key one side
deleted and the other changed, or one list element both sides replaced differently is a
conflict. The merge is done twice, on purpose, as for TOML (:mod:`.toml_merge`, whose data
merge this shares):

* on the data: what the merged file must mean (:func:`.toml_merge.merge_value`);
* on the text: ours, with theirs' changes spliced in piece by piece (:mod:`.languages.data_tree`).
  A key neither side touched keeps its bytes; a key one side changed is taken as that side
  wrote it, comments included; a container both sides changed is rebuilt from its members'
  own text in our layout (its separators, its indentation).

A clean text merge is written only if it parses and means exactly what the data merge says.
Otherwise the file is merged by lines, and a clean line merge must pass the same check or
the file is handed back whole as a conflict. When keys collide, the line merge's markers
are kept only if taking ours at every marker means ours' version of every colliding key
(and likewise theirs), so no collision is settled silently outside the markers.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from .languages import json_doc, toml, yaml_doc
from .languages.data_tree import Document, Member, Node, NotData, same
from .languages.toml import canon
from .line_merge import Clash, merge3, render, split_lines
from .ordering import Reordered, merged_order
from .regions import Merger
from .result import ConflictHunk, ConflictReason, EntityConflict, MergeResult
from .toml_merge import MISSING, merge_list, merge_toml, merge_value

__all__ = ["data_merger_for", "merge_json", "merge_yaml"]

DataMerge = Callable[[bytes, bytes, bytes, str, int], MergeResult]


class _Unmergeable(Exception):
    """Raised when the text merge cannot build what the data merge says."""


@dataclass(frozen=True, slots=True)
class _Format:
    name: str
    parse: Callable[[str], Document]
    by_lines: bool
    """Members are whole lines (YAML), not pieces between separators (JSON)."""


JSON = _Format("json", json_doc.parse, by_lines=False)
YAML = _Format("yaml", yaml_doc.parse, by_lines=True)


# -- the text ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Walk:
    form: _Format
    marker_size: int

    def lines(self, base: str, ours: str, theirs: str) -> str:
        """A piece outside any value (a key, a comment, spacing) merged by lines."""
        if ours == theirs or theirs == base:
            return ours
        if ours == base:
            return theirs
        merger = Merger(self.marker_size)
        out = merger.lines(base.encode(), ours.encode(), theirs.encode(), kind="text", name="")
        if merger.conflicts:
            raise _Unmergeable("both sides changed the text around one value")
        return out.decode()

    def node(self, b: Node | None, o: Node, t: Node) -> str:
        if o.text == t.text or (b is not None and t.text == b.text):
            return o.text
        if b is not None and o.text == b.text:
            return t.text
        if b is not None and o.kind == t.kind == b.kind == "map":
            return self.map(b, o, t)
        if b is not None and o.kind == t.kind == b.kind == "seq":
            return self.seq(b, o, t)
        if b is not None and any(same(x.data, y.data) for x, y in ((o, t), (t, b), (o, b))):
            # One side (or both alike) changed only how the value is written.
            try:
                return self.lines(b.text, o.text, t.text)
            except _Unmergeable:
                return t.text if same(o.data, b.data) else o.text
        raise _Unmergeable("both sides changed one value")

    def member(self, b: Member | None, o: Member, t: Member) -> str:
        if o.text == t.text or (b is not None and t.text == b.text):
            return o.text
        if b is not None and o.text == b.text:
            return t.text
        if b is None:
            if same(o.value.data, t.value.data):
                return o.text
            raise _Unmergeable("both sides added one key differently")
        value = self.node(b.value, o.value, t.value)
        head = self.lines(*(m.text[: m.at] for m in (b, o, t)))
        tail = self.lines(*(m.text[m.at + len(m.value.text) :] for m in (b, o, t)))
        return head + value + tail

    def map(self, b: Node, o: Node, t: Node) -> str:
        by = [{m.key: m for m in n.members} for n in (b, o, t)]
        keys = [[m.key for m in n.members] for n in (b, o, t)]
        keep: set[str | None] = set()
        for key in {*keys[1], *keys[2]}:
            bm, om, tm = (d.get(key) for d in by)
            if (om is not None and tm is not None) or bm is None:
                keep.add(key)
                continue
            kept = om if om is not None else tm
            assert kept is not None
            if not same(kept.value.data, bm.value.data):
                raise _Unmergeable(f"one side deleted {key!r}, the other changed it")
        try:
            # merged_order is written for entity keys; any hashable key does.
            order: list[str | None] = cast(Any, merged_order)(*keys, keep)
        except Reordered as exc:
            raise _Unmergeable("both sides reordered one mapping") from exc
        chunks = []
        for name in order:
            bm, om, tm = (d.get(name) for d in by)
            if om is not None and tm is not None:
                chunks.append(self.member(bm, om, tm))
            else:
                kept = om if om is not None else tm
                assert kept is not None
                chunks.append(kept.text)
        return self.join(o, (t, b), chunks)

    def seq(self, b: Node, o: Node, t: Node) -> str:
        nodes = (b, o, t)
        if len({len(n.members) for n in nodes}) == 1 and all(
            m.value.kind == "map" for n in nodes for m in n.members
        ):  # a list of records: matched by position, as the data merge does
            members = zip(b.members, o.members, t.members, strict=True)
            return self.join(o, (t, b), [self.member(*trio) for trio in members])
        wanted = merge_list(b.data, o.data, t.data)
        if wanted is None:
            raise _Unmergeable("both sides replaced one element differently")
        pool: dict[Any, list[str]] = {}
        for n in (o, t, b):
            for m in n.members:
                pool.setdefault(canon(m.value.data), []).append(m.text)
        chunks = []
        for value in wanted:
            candidates = pool[canon(value)]
            chunks.append(candidates.pop(0) if len(candidates) > 1 else candidates[0])
        return self.join(o, (t, b), chunks)

    def join(self, o: Node, others: tuple[Node, ...], chunks: list[str]) -> str:
        """Container `o` holding `chunks`, in its own layout where it has one."""
        if self.form.by_lines:
            if not chunks:
                raise _Unmergeable("a block container would be left empty")
            chunks = [c if c.endswith("\n") else c + "\n" for c in chunks[:-1]] + chunks[-1:]
            text = "".join(chunks)
            if not text.startswith(" " * o.lead_strip):
                raise _Unmergeable("a comment would move onto a '-' line")
            return text[o.lead_strip :]
        if len(chunks) == len(o.members) and chunks:  # our separators, one for one
            parts = [o.gaps[0]]
            for chunk, gap in zip(chunks, o.gaps[1:], strict=True):
                parts += [chunk, gap]
            return "".join(parts)
        shaped = next((n for n in (o, *others) if n.members), o)
        opening, closing = shaped.gaps[0], shaped.gaps[-1]
        spaced = next((n for n in (o, *others) if len(n.members) > 1), None)
        if spaced is not None:
            sep = spaced.gaps[1]
        else:
            sep = "," + opening[1:] if "\n" in opening else ", "
        if not chunks:
            return o.text[0] + o.text[-1]
        return opening + sep.join(chunks) + closing


# -- the file ----------------------------------------------------------------------------


def _result(content: str | bytes, form: _Format, strategy: Any, note: str = "") -> MergeResult:
    data = content.encode() if isinstance(content, str) else content
    return MergeResult(content=data, conflicts=(), strategy=strategy, language=form.name, note=note)


_UNREADABLE = object()
"""What a text the format's reader refuses means: equal to nothing."""


def _meaning(form: _Format, text: str) -> Any:
    try:
        return form.parse(text).root.data
    except NotData:
        return _UNREADABLE


def _merge(
    form: _Format, base: bytes, ours: bytes, theirs: bytes, path: str, marker_size: int
) -> MergeResult:
    if ours == theirs or theirs == base:
        return _result(ours, form, "entity")
    if ours == base:
        return _result(theirs, form, "entity")
    try:
        return _by_key(form, base, ours, theirs, path, marker_size)
    except RecursionError:  # the readers and the walk recurse once per level
        note = f"nests deeper than the key merge follows ({sys.getrecursionlimit()} levels)"
        return _lines(base, ours, theirs, path, marker_size, form, f"{note}; merged by lines")


def _by_key(
    form: _Format, base: bytes, ours: bytes, theirs: bytes, path: str, marker_size: int
) -> MergeResult:
    docs: list[Document] = []
    for side, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        try:
            docs.append(form.parse(data.decode("utf-8")))
        except (UnicodeDecodeError, NotData) as exc:
            why = "is not UTF-8" if isinstance(exc, UnicodeDecodeError) else str(exc)
            note = f"{side} {why} as {form.name.upper()}; merged by lines"
            return _lines(base, ours, theirs, path, marker_size, form, note)
    b, o, t = docs
    collisions: list[str] = []
    wanted = merge_value(b.root.data, o.root.data, t.root.data, "", collisions)
    if collisions:
        return _collided(form, base, ours, theirs, path, marker_size, docs, collisions)
    walk = _Walk(form, marker_size)
    try:
        text = (
            walk.lines(b.prefix, o.prefix, t.prefix)
            + walk.node(b.root, o.root, t.root)
            + walk.lines(b.suffix, o.suffix, t.suffix)
        )
    except (_Unmergeable, NotData) as exc:  # NotData: a container read only when opened
        return _checked_lines(form, base, ours, theirs, path, marker_size, wanted, str(exc))
    if same(_meaning(form, text), wanted):
        return _result(text, form, "entity")
    note = "the key merge did not mean what the data merge says"
    return _checked_lines(form, base, ours, theirs, path, marker_size, wanted, note)


def _reason(base: Any, ours: Any, theirs: Any) -> ConflictReason:
    """How the first colliding key collides, walking the data as the data merge does."""
    if not all(isinstance(v, dict) for v in (base, ours, theirs)):
        return "both-modified"
    for key in [*ours, *(k for k in theirs if k not in ours)]:
        b, o, t = (d.get(key, MISSING) for d in (base, ours, theirs))
        if same(o, t) or same(t, b) or same(o, b):
            continue
        if o is MISSING or t is MISSING:
            return "delete-modify" if o is MISSING else "modify-delete"
        return _reason(b, o, t)
    return "both-modified"


def _lines(
    base: bytes,
    ours: bytes,
    theirs: bytes,
    path: str,
    marker_size: int,
    form: _Format,
    note: str,
    *,
    kind: str = "file",
    name: str = "",
    reason: ConflictReason = "both-modified",
) -> MergeResult:
    merger = Merger(marker_size)
    content = merger.lines(base, ours, theirs, kind=kind, name=name or path, reason=reason)
    return MergeResult(
        content=content,
        conflicts=tuple(merger.conflicts),
        strategy="line",
        language=form.name,
        note=note,
    )


def _checked_lines(
    form: _Format,
    base: bytes,
    ours: bytes,
    theirs: bytes,
    path: str,
    marker_size: int,
    wanted: Any,
    why: str,
) -> MergeResult:
    """The line merge if it conflicts, or is clean and means `wanted`; else one whole-file
    conflict."""
    note = f"{why}; merged by lines"
    line = _lines(base, ours, theirs, path, marker_size, form, note)
    if not line.clean or same(_meaning(form, line.content.decode("utf-8", "replace")), wanted):
        return line
    return _whole(
        base,
        ours,
        theirs,
        path,
        marker_size,
        form,
        "the lines merge into something neither side meant",
        "both-modified",
    )


def _collided(
    form: _Format,
    base: bytes,
    ours: bytes,
    theirs: bytes,
    path: str,
    marker_size: int,
    docs: list[Document],
    collisions: list[str],
) -> MergeResult:
    """Keys that collide: the line merge's markers if they hold every collision, else the
    whole file as one conflict."""
    b, o, t = (d.root.data for d in docs)
    names = ", ".join(collisions)
    reason = _reason(b, o, t)
    note = f"keys collide: {names}"
    line = _lines(
        base, ours, theirs, path, marker_size, form, note, kind="key", name=names, reason=reason
    )
    if not line.clean:
        chunks = merge3(split_lines(base), split_lines(ours), split_lines(theirs))
        take_ours = b"".join(b"".join(c.ours if isinstance(c, Clash) else c.lines) for c in chunks)
        take_theirs = b"".join(
            b"".join(c.theirs if isinstance(c, Clash) else c.lines) for c in chunks
        )
        as_ours = merge_value(b, o, t, "", [])
        as_theirs = merge_value(b, t, o, "", [])
        if same(_meaning(form, take_ours.decode("utf-8", "replace")), as_ours) and same(
            _meaning(form, take_theirs.decode("utf-8", "replace")), as_theirs
        ):
            return line
    return _whole(base, ours, theirs, path, marker_size, form, f"keys collide: {names}", reason)


def _whole(
    base: bytes,
    ours: bytes,
    theirs: bytes,
    path: str,
    marker_size: int,
    form: _Format,
    why: str,
    reason: ConflictReason,
) -> MergeResult:
    """The whole file as one conflict: ours and theirs between markers naming why."""
    whole = Clash(base=_piece(base), ours=_piece(ours), theirs=_piece(theirs))
    content = render([whole], label=f"file {path}: {why}", marker_size=marker_size).content
    hunk = ConflictHunk(
        base=base.decode("utf-8", "replace"),
        ours=ours.decode("utf-8", "replace"),
        theirs=theirs.decode("utf-8", "replace"),
    )
    conflict = EntityConflict(kind="file", name=path, reason=reason, hunks=(hunk,))
    return MergeResult(
        content=content, conflicts=(conflict,), strategy="line", language=form.name, note=why
    )


def _piece(data: bytes) -> tuple[bytes, ...]:
    return (data,) if data else ()


def merge_json(base: bytes, ours: bytes, theirs: bytes, path: str, marker_size: int) -> MergeResult:
    """Merge a JSON file's three versions by key and element (see the module docstring)."""
    return _merge(JSON, base, ours, theirs, path, marker_size)


def merge_yaml(base: bytes, ours: bytes, theirs: bytes, path: str, marker_size: int) -> MergeResult:
    """Merge a YAML file's three versions by key and element (see the module docstring)."""
    return _merge(YAML, base, ours, theirs, path, marker_size)


_BY_EXTENSION: dict[str, DataMerge] = {
    **dict.fromkeys(toml.EXTENSIONS, merge_toml),
    **dict.fromkeys(json_doc.EXTENSIONS, merge_json),
    **dict.fromkeys(yaml_doc.EXTENSIONS, merge_yaml),
}


def data_merger_for(path: str) -> DataMerge | None:
    """The key merge for a configuration file's extension (TOML, JSON, YAML), or None."""
    return _BY_EXTENSION.get(os.path.splitext(path)[1].lower())
