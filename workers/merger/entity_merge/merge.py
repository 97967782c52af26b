"""Entity-level three-way merge.

Each version is cut into entities (see `entities`). Entities are matched across
base, ours and theirs by key; a one-sided change is taken, an entity both sides
changed is merged by lines inside that entity (or member by member if it is a
container), independent additions are all kept, and only a true collision — the
same lines of one entity, or one side changing what the other deleted — becomes a
conflict, marked with the entity's name. Anything the entity merge cannot handle
falls back to a plain three-way line merge, and a clean result that no longer
parses is reported as a conflict rather than written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import msgspec

from .entities import Entity, Key, NotSplittable, Region, extract
from .languages import LanguageSpec, language_for_path
from .line_merge import Clash, Stable, merge3, render, split_lines
from .matching import Reordered, align_repeats, merged_order, rematch
from .result import ConflictHunk, ConflictReason, EntityConflict, MergeResult

__all__ = ["merge_file"]


def _text(lines: tuple[bytes, ...] | bytes) -> str:
    data = lines if isinstance(lines, bytes) else b"".join(lines)
    return data.decode("utf-8", errors="replace")


def _hunk(clash: Clash) -> ConflictHunk:
    return ConflictHunk(base=_text(clash.base), ours=_text(clash.ours), theirs=_text(clash.theirs))


def _blank(lines: tuple[bytes, ...]) -> bool:
    return all(not line.strip() for line in lines)


def _concat(parts: list[bytes]) -> bytes:
    # Only the last line of a file may lack its newline: once another piece follows
    # such a line it gets one, or two entities would end up sharing a line.
    out = bytearray()
    for part in parts:
        if part and out and not out.endswith(b"\n"):
            out += b"\n"
        out += part
    return bytes(out)


def _significant(gap: bytes) -> list[bytes]:
    return [line.strip() for line in split_lines(gap) if line.strip()]


def _changed(base: Entity, side: Entity) -> bool:
    # Spacing above an entity is not a change worth a modify/delete conflict.
    return base.text != side.text or _significant(base.gap) != _significant(side.gap)


def _spacing(key: Key, side: tuple[Entity, ...]) -> bytes:
    """The blank lines `side` puts between entities, if `key` was its first entity."""
    if len(side) < 2 or side[0].key != key or side[0].gap.strip():
        return b""
    gap = side[1].gap
    return gap if not gap.strip() else b""


def _survives(base: Entity | None, ours: Entity | None, theirs: Entity | None) -> bool:
    if base is None or (ours is not None and theirs is not None):
        return True
    if ours is None and theirs is None:
        return False
    # One side deleted it: it stays (as a conflict) only if the other side changed it.
    kept = ours if ours is not None else theirs
    assert kept is not None
    return _changed(base, kept)


@dataclass(slots=True)
class _Merger:
    marker_size: int
    conflicts: list[EntityConflict] = field(default_factory=list)

    def lines(
        self,
        base: bytes,
        ours: bytes,
        theirs: bytes,
        *,
        kind: str,
        name: str,
        reason: ConflictReason = "both-modified",
        spacing_from_ours: bool = False,
    ) -> bytes:
        """Line-merge one piece, recording a conflict named after `kind` and `name`."""
        if ours == theirs or theirs == base:
            return ours
        if ours == base:
            return theirs
        chunks = merge3(split_lines(base), split_lines(ours), split_lines(theirs))
        if spacing_from_ours:
            # Both sides re-spacing the same gap is not worth an author's time.
            chunks = [
                Stable(c.ours)
                if isinstance(c, Clash) and _blank(c.ours) and _blank(c.theirs)
                else c
                for c in chunks
            ]
        merged = render(chunks, label=f"{kind} {name}", marker_size=self.marker_size)
        if merged.clashes:
            hunks = tuple(_hunk(c) for c in merged.clashes)
            self.conflicts.append(EntityConflict(kind=kind, name=name, reason=reason, hunks=hunks))
        return merged.content

    def region(self, base: Region, ours: Region, theirs: Region, where: str) -> bytes:
        """Merge a region (a file or a container's inside) entity by entity."""
        ours_entities = rematch(base.entities, align_repeats(base.entities, ours.entities))
        theirs_entities = rematch(base.entities, align_repeats(base.entities, theirs.entities))
        b = {e.key: e for e in base.entities}
        o = {e.key: e for e in ours_entities}
        t = {e.key: e for e in theirs_entities}
        every = b.keys() | o.keys() | t.keys()
        keep = {k for k in every if _survives(b.get(k), o.get(k), t.get(k))}
        # Ordering first: it is the one step that can give up on the region, and it
        # must do so before any conflict of this region has been recorded.
        order = merged_order(list(b), list(o), list(t), keep)
        parts = [
            self.lines(
                base.head, ours.head, theirs.head, kind="comment", name=f"at the start of {where}"
            )
        ]
        for position, key in enumerate(order):
            spacing = b""
            if position > 0 and key not in b:
                spacing = _spacing(key, ours_entities) or _spacing(key, theirs_entities)
            parts.append(self.entity(b.get(key), o.get(key), t.get(key), spacing=spacing))
        parts.append(
            self.lines(
                base.tail,
                ours.tail,
                theirs.tail,
                kind="comment",
                name=f"at the end of {where}",
                spacing_from_ours=True,
            )
        )
        return _concat(parts)

    def entity(
        self,
        base: Entity | None,
        ours: Entity | None,
        theirs: Entity | None,
        *,
        spacing: bytes = b"",
    ) -> bytes:
        """One surviving entity with the gap above it.

        `spacing` replaces an empty gap for an added entity that was first on its
        side but no longer is, so it does not end up glued to its new predecessor.
        """
        if ours is not None and theirs is not None:
            gap = self.lines(
                base.gap if base is not None else b"",
                ours.gap,
                theirs.gap,
                kind="comment",
                name=f"above {(base or ours).label}",
                spacing_from_ours=True,
            )
            if base is None:
                body = self.added_twice(ours, theirs)
            else:
                body = self.both_present(base, ours, theirs)
            return _concat([gap, body])
        kept = ours if ours is not None else theirs
        assert kept is not None
        if base is None:
            gap = kept.gap if kept.gap.strip() or not spacing else spacing
            return _concat([gap, kept.text])
        return _concat([kept.gap, self.deleted(base, kept, deleted_by_theirs=ours is not None)])

    def both_present(self, base: Entity, ours: Entity, theirs: Entity) -> bytes:
        """Merge an entity that is in all three versions."""
        if ours.text == theirs.text or theirs.text == base.text:
            return ours.text
        if ours.text == base.text:
            return theirs.text
        if base.body is not None and ours.body is not None and theirs.body is not None:
            mark = len(self.conflicts)
            try:
                inside = self.region(base.body, ours.body, theirs.body, where=base.label)
            except Reordered:
                del self.conflicts[mark:]
            else:
                header = self.lines(
                    base.header, ours.header, theirs.header, kind=base.kind, name=base.display_name
                )
                footer = self.lines(
                    base.footer, ours.footer, theirs.footer, kind=base.kind, name=base.display_name
                )
                return _concat([header, inside, footer])
        # Named after the base version: an edited statement is known by what it was.
        return self.lines(base.text, ours.text, theirs.text, kind=base.kind, name=base.display_name)

    def added_twice(self, ours: Entity, theirs: Entity) -> bytes:
        """Both sides added an entity with the same key: fine only if they agree."""
        return self.lines(
            b"",
            ours.text,
            theirs.text,
            kind=ours.kind,
            name=ours.display_name,
            reason="both-added",
        )

    def deleted(self, base: Entity, kept: Entity, *, deleted_by_theirs: bool) -> bytes:
        """One side deleted what the other changed: keep both views, marked."""
        size = self.marker_size
        label = base.label
        ours_text = kept.text if deleted_by_theirs else b""
        theirs_text = b"" if deleted_by_theirs else kept.text
        ours_note = "" if deleted_by_theirs else ", deleted"
        theirs_note = ", deleted" if deleted_by_theirs else ""
        parts = [
            f"{'<' * size} ours ({label}{ours_note})\n".encode(),
            ours_text,
            f"{'=' * size}\n".encode(),
            theirs_text,
            f"{'>' * size} theirs ({label}{theirs_note})\n".encode(),
        ]
        reason: ConflictReason = "modify-delete" if deleted_by_theirs else "delete-modify"
        hunk = ConflictHunk(base=_text(base.text), ours=_text(ours_text), theirs=_text(theirs_text))
        self.conflicts.append(
            EntityConflict(kind=base.kind, name=base.display_name, reason=reason, hunks=(hunk,))
        )
        return _concat(parts)


def _line_result(
    base: bytes,
    ours: bytes,
    theirs: bytes,
    path: str,
    *,
    note: str,
    spec: LanguageSpec | None,
    must_parse: bool,
    marker_size: int,
) -> MergeResult:
    """A plain three-way line merge of the whole file."""
    merger = _Merger(marker_size)
    content = merger.lines(base, ours, theirs, kind="file", name=path)
    language = spec.name if spec is not None else None
    if merger.conflicts:
        return MergeResult(
            content=content,
            conflicts=tuple(merger.conflicts),
            strategy="line",
            language=language,
            note=note,
        )
    if must_parse and spec is not None and not spec.parses(content):
        return _unparseable(base, ours, theirs, path, spec, marker_size, note=note)
    return MergeResult(content=content, conflicts=(), strategy="line", language=language, note=note)


def _unparseable(
    base: bytes,
    ours: bytes,
    theirs: bytes,
    path: str,
    spec: LanguageSpec,
    marker_size: int,
    *,
    note: str,
) -> MergeResult:
    """Both sides parse, every piece merged, and still the result is broken code.

    Typical cause: an edit in one entity that only makes sense with a neighbour the
    other side changed. The file is handed back whole, ours against theirs, so an
    author sees both versions and nothing broken is ever committed as clean.
    """
    label = f"file {path}: merged result does not parse"
    merged = render(
        [Clash(base=tuple(split_lines(base)), ours=(ours,), theirs=(theirs,))],
        label=label,
        marker_size=marker_size,
    )
    conflict = EntityConflict(
        kind="file",
        name=path,
        reason="result-unparseable",
        hunks=(ConflictHunk(base=_text(base), ours=_text(ours), theirs=_text(theirs)),),
    )
    return MergeResult(
        content=merged.content,
        conflicts=(conflict,),
        strategy="line",
        language=spec.name,
        note=f"{note}; the line merge result does not parse as {spec.name} either",
    )


def _binary(data: bytes) -> bool:
    # git's own test: a NUL byte in the first 8000 bytes means "not text".
    return b"\0" in data[:8000]


def _binary_result(base: bytes, ours: bytes, theirs: bytes, path: str) -> MergeResult:
    """Binary content is never line-merged: one-sided changes pass, anything else conflicts."""
    note = "binary file"
    if ours == theirs or theirs == base:
        return MergeResult(content=ours, conflicts=(), strategy="line", language=None, note=note)
    if ours == base:
        return MergeResult(content=theirs, conflicts=(), strategy="line", language=None, note=note)
    conflict = EntityConflict(kind="file", name=path, reason="binary", hunks=())
    return MergeResult(
        content=ours, conflicts=(conflict,), strategy="line", language=None, note=note
    )


def merge_file(
    base: bytes, ours: bytes, theirs: bytes, path: str, *, marker_size: int = 7
) -> MergeResult:
    """Three-way merge of one file's three versions; `path` picks the language.

    Pure: no I/O, no git. `base` is empty for a file both sides added. The result is
    entity-merged when the extension has a grammar and all three versions parse,
    line-merged otherwise (see `MergeResult.note` for why).
    """
    spec = language_for_path(path)

    def fallback(note: str, *, must_parse: bool) -> MergeResult:
        return _line_result(
            base,
            ours,
            theirs,
            path,
            note=note,
            spec=spec,
            must_parse=must_parse,
            marker_size=marker_size,
        )

    if any(_binary(data) for data in (base, ours, theirs)):
        return _binary_result(base, ours, theirs, path)
    if spec is None:
        ext = os.path.splitext(path)[1] or path
        return fallback(f"no entity grammar for {ext!r}", must_parse=False)
    trees = []
    for side, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        tree = spec.parser().parse(data)
        if spec.broken(tree.root_node):
            return fallback(f"{side} does not parse as {spec.name}", must_parse=False)
        trees.append(tree)
    if ours == theirs or theirs == base:
        return MergeResult(content=ours, conflicts=(), strategy="entity", language=spec.name)
    if ours == base:
        return MergeResult(content=theirs, conflicts=(), strategy="entity", language=spec.name)
    try:
        base_region, ours_region, theirs_region = (
            extract(tree.root_node, split_lines(data), spec)
            for tree, data in zip(trees, (base, ours, theirs), strict=True)
        )
    except NotSplittable as exc:
        return fallback(f"statements share a line ({exc})", must_parse=True)
    merger = _Merger(marker_size)
    try:
        content = merger.region(base_region, ours_region, theirs_region, where=f"file {path}")
    except Reordered:
        return fallback("both sides reordered entities differently", must_parse=True)
    if merger.conflicts:
        return MergeResult(
            content=content,
            conflicts=tuple(merger.conflicts),
            strategy="entity",
            language=spec.name,
        )
    if spec.parses(content):
        return MergeResult(content=content, conflicts=(), strategy="entity", language=spec.name)
    # The entity merge glued something the grammar rejects; a plain line merge might
    # not. If that one conflicts, its hunks are the evidence, but the reason stays
    # the unparseable result: without it the entity merge would have been clean.
    line = fallback("the entity merge result did not parse", must_parse=True)
    return msgspec.structs.replace(
        line,
        conflicts=tuple(
            msgspec.structs.replace(c, reason="result-unparseable") for c in line.conflicts
        ),
    )
