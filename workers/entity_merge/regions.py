"""Entity-by-entity merge of one region (a file, or a container's inside).

`Merger.region` matches the three versions' entities (see `matching`), decides each
key — one side's change, both sides' changes merged inside the entity, a collision
marked with the entity's name — and joins the pieces back in order. `merge` wraps it
with parsing, fallbacks and the final checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .combine import combine_names, keep_additions, lists_names
from .doubled import doubled_lines
from .entities import Entity, Key, Region
from .entries import merge_entries
from .gaps import (
    added_apart,
    grouped_additions,
    inner_spacing,
    moved_alone,
    significant_lines,
    spacing_only,
)
from .languages import LanguageSpec
from .line_merge import Clash, Stable, merge3, render, split_lines
from .matching import align_repeats, pair_additions, rematch, replacements
from .ordering import Reordered, merged_order
from .result import ConflictHunk, ConflictReason, EntityConflict
from .words import combined_lines, merge_words, said_alike

__all__ = ["Merger"]


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


def _piece(text: bytes) -> tuple[bytes, ...]:
    return (text,) if text else ()


def _clean_lines(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """The line merge of three texts if it has no clash, else None."""
    chunks = merge3(split_lines(base), split_lines(ours), split_lines(theirs))
    if any(isinstance(c, Clash) for c in chunks):
        return None
    return render(chunks).content


def _changed(base: Entity, side: Entity) -> bool:
    # Spacing above an entity is not a change worth a modify/delete conflict.
    return base.text != side.text or significant_lines(base.gap) != significant_lines(side.gap)


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


# Entity kinds whose text is a list of names that two sides may each extend.
_NAME_LISTS = frozenset({"import", "export"})

# A base entity both sides dropped, and what each side put in its place.
_Replaced = tuple[Entity, tuple[Entity, ...], tuple[Entity, ...]]


def _replaced(
    base: tuple[Entity, ...], ours: tuple[Entity, ...], theirs: tuple[Entity, ...]
) -> dict[Key, _Replaced]:
    """Base entities both sides replaced differently, keyed by one replacement's key.

    Matching already turned every recognisable edit into a modification; what is left
    is a base entity both sides dropped. If each side put a different statement of the
    same sort in its place, or one side dropped it and the other wrapped it (its lines
    live on inside something new), keeping every addition would keep both rewrites, or
    undo a deletion: those are collisions. Identical replacements share keys and merge.
    """
    o_new, t_new = replacements(base, ours, loose=True), replacements(base, theirs, loose=True)
    o_keys, t_keys = {e.key: e for e in ours}, {e.key: e for e in theirs}
    found: dict[Key, _Replaced] = {}
    for old in base:
        if old.key in o_keys or old.key in t_keys:
            continue
        mine = tuple(o_keys[k] for k in o_new.get(old.key, ()))
        yours = tuple(t_keys[k] for k in t_new.get(old.key, ()))
        if [e.text for e in mine] == [e.text for e in yours]:
            continue
        if not (mine and yours):
            strict = replacements((old,), mine or yours, loose=False)
            if not strict:
                continue  # deleted on both sides; the other addition is just an addition
        found[(mine or yours)[0].key] = (old, mine, yours)
    return found


@dataclass(slots=True)
class Merger:
    marker_size: int
    spec: LanguageSpec | None = None
    conflicts: list[EntityConflict] = field(default_factory=list)
    # The lines of keyed-literal entries both sides inserted at one place and the
    # merge kept (`entries`); the merged file's tree must confirm each is one.
    joined: list[bytes] = field(default_factory=list)
    # Ours' lines taken where theirs said the same with other spacing (`said_alike`).
    alike: list[bytes] = field(default_factory=list)
    # Lines the word merge wrote that neither side did: one side's words with the other
    # side's spacing or indentation (`merge_words`).
    worded: list[bytes] = field(default_factory=list)
    # Of `alike`, the lines whose two sides spaced their words differently (not only
    # their indentation): in a comment that spacing is prose.
    respaced: list[bytes] = field(default_factory=list)

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
        words: bool = True,
    ) -> bytes:
        """Line-merge one piece, recording a conflict named after `kind` and `name`.

        With `words`, an entity merge settles a clash word by word where it can.
        """
        if ours == theirs or theirs == base:
            return ours
        if ours == base:
            return theirs
        # Only an entity merge settles clashes word by word: its result is parsed and
        # checked again, a plain line merge's is not.
        refine = self._settle if self.spec is not None and words else None
        chunks = merge3(split_lines(base), split_lines(ours), split_lines(theirs), refine=refine)
        if spacing_from_ours:
            # Both sides re-spacing the same gap is not worth an author's time.
            chunks = [
                Stable(c.ours)
                if isinstance(c, Clash) and _blank(c.ours) and _blank(c.theirs)
                else c
                for c in chunks
            ]
        merged = render(chunks, label=f"{kind} {name}", marker_size=self.marker_size)
        if not merged.clashes and doubled_lines(base, ours, theirs, merged.content):
            # Both sides added one line at different places: both copies would run.
            whole = Clash(tuple(split_lines(base)), (ours,), (theirs,))
            merged = render([whole], label=f"{kind} {name}", marker_size=self.marker_size)
            reason = "both-added"
        if merged.clashes:
            hunks = tuple(_hunk(c) for c in merged.clashes)
            self.conflicts.append(EntityConflict(kind=kind, name=name, reason=reason, hunks=hunks))
        return merged.content

    def _settle(
        self, base: list[bytes], ours: list[bytes], theirs: list[bytes]
    ) -> list[bytes] | None:
        """A clash settled as one change made alike, by entries of keys or by words, or None."""
        assert self.spec is not None
        if said_alike(ours, theirs):
            # Spacing inside a string or comment spanning lines is content: the merged tree
            # decides.
            self.alike.extend(o for o, t in zip(ours, theirs, strict=True) if o != t)
            self.respaced.extend(
                o for o, t in zip(ours, theirs, strict=True) if inner_spacing(o) != inner_spacing(t)
            )
            return ours
        if self.spec.keyed_entries:
            joined = merge_entries(base, ours, theirs)
            if joined is not None:
                self.joined.extend(joined)
                return joined
        merged = merge_words(base, ours, theirs, blocks_by_indent=self.spec.blocks_by_indent)
        if merged is not None:
            # Inside a string spanning lines that spacing was content: the merged tree
            # decides.
            self.worded.extend(
                combined_lines(
                    base, ours, theirs, merged, blocks_by_indent=self.spec.blocks_by_indent
                )
            )
        return merged

    def region(self, base: Region, ours: Region, theirs: Region, where: str) -> bytes:
        """Merge a region (a file or a container's inside) entity by entity."""
        blank = self.spec.blank_names if self.spec is not None else frozenset()
        ours_entities = rematch(
            base.entities, align_repeats(base.entities, ours.entities, blank_names=blank)
        )
        theirs_entities = rematch(
            base.entities, align_repeats(base.entities, theirs.entities, blank_names=blank)
        )
        theirs_entities = pair_additions(base.entities, ours_entities, theirs_entities)
        b = {e.key: e for e in base.entities}
        o = {e.key: e for e in ours_entities}
        t = {e.key: e for e in theirs_entities}
        every = b.keys() | o.keys() | t.keys()
        keep = {k for k in every if _survives(b.get(k), o.get(k), t.get(k))}
        replaced = _replaced(base.entities, ours_entities, theirs_entities)
        for key, (_, mine, yours) in replaced.items():
            keep -= {e.key for e in (*mine, *yours)}
            keep.add(key)
        # Ordering first: it is the one step that can give up on the region, and it
        # must do so before any conflict of this region has been recorded.
        grouped = grouped_additions(base.entities, ours_entities, _NAME_LISTS)
        grouped |= grouped_additions(base.entities, theirs_entities, _NAME_LISTS)
        order = merged_order(list(b), list(o), list(t), keep, grouped)
        parts = [
            self.lines(
                base.head, ours.head, theirs.head, kind="comment", name=f"at the start of {where}"
            )
        ]
        moved = moved_alone(base.entities, ours_entities, theirs_entities)
        apart = added_apart(base.entities, ours_entities, theirs_entities)
        for position, key in enumerate(order):
            spacing = b""
            if position > 0 and key not in b:
                spacing = _spacing(key, ours_entities) or _spacing(key, theirs_entities)
            if key in replaced:
                parts.append(self.clash(*replaced[key]))
                continue
            if key in apart:
                parts.append(self.placed_apart(o[key], t[key]))
                continue
            entity = self.entity(
                b.get(key), o.get(key), t.get(key), spacing=spacing, moved=moved.get(key)
            )
            parts.append(entity)
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
        moved: Entity | None = None,
    ) -> bytes:
        """One surviving entity with the gap above it.

        `spacing` replaces an empty gap for an added entity that was first on its
        side but no longer is, so it does not end up glued to its new predecessor.
        `moved` is the side's version of the entity when that side alone moved it.
        """
        if ours is not None and theirs is not None:
            other = theirs if moved is ours else ours
            if moved is not None and base is not None and spacing_only(base.gap, other.gap):
                # The other side's blank lines were about the entity's old place (an
                # import inserted above it took the blank line over): at its new place
                # the side that moved it says what goes above it.
                gap = moved.gap
            else:
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
        if base.kind in _NAME_LISTS and self.spec is not None:
            # One side dropped the import, the other changed it: the names it added
            # survive the drop, the names it had do not.
            rest = keep_additions(self.spec, base.text, kept.text)
            if rest is not None:
                return _concat([kept.gap, rest]) if rest else b""
        return _concat([kept.gap, self.deleted(base, kept, deleted_by_theirs=ours is not None)])

    def both_present(self, base: Entity, ours: Entity, theirs: Entity) -> bytes:
        """Merge an entity that is in all three versions."""
        if ours.text == theirs.text or theirs.text == base.text:
            return ours.text
        if ours.text == base.text:
            return theirs.text
        if base.kind in _NAME_LISTS and self.spec is not None:
            # A list laid out one name per line often merges by lines, and then keeps
            # the places each side chose (a sorted list stays sorted); the duplicate
            # check still sees a name both sides added. Otherwise merge it by names.
            merged = _clean_lines(base.text, ours.text, theirs.text)
            if merged is None:
                merged = combine_names(self.spec, base.text, ours.text, theirs.text)
            if merged is not None:
                return merged
        b_in, o_in, t_in = base.inside(), ours.inside(), theirs.inside()
        if b_in is not None and o_in is not None and t_in is not None:
            mark = len(self.conflicts)
            try:
                inside = self.region(b_in.body, o_in.body, t_in.body, where=base.label)
            except Reordered:
                del self.conflicts[mark:]
            else:
                header = self.lines(
                    b_in.header, o_in.header, t_in.header, kind=base.kind, name=base.display_name
                )
                footer = self.lines(
                    b_in.footer, o_in.footer, t_in.footer, kind=base.kind, name=base.display_name
                )
                return _concat([header, inside, footer])
        # Imports and lists of names are merged as names per module (`combine_names`);
        # where that gave up, their words must not merge either (a module moved on one
        # side and a name added to it on the other clash). Any other statement may.
        words = base.kind != "import" and not (
            base.kind in _NAME_LISTS and self.spec is not None and lists_names(self.spec, base.text)
        )
        # Named after the base version: an edited statement is known by what it was.
        return self.lines(
            base.text, ours.text, theirs.text, kind=base.kind, name=base.display_name, words=words
        )

    def added_twice(self, ours: Entity, theirs: Entity) -> bytes:
        """Both sides added an entity with the same key: fine if they agree or combine."""
        if ours.kind in _NAME_LISTS and self.spec is not None and ours.text != theirs.text:
            combined = combine_names(self.spec, None, ours.text, theirs.text)
            if combined is not None:
                return combined
        return self.lines(
            b"",
            ours.text,
            theirs.text,
            kind=ours.kind,
            name=ours.display_name,
            reason="both-added",
        )

    def placed_apart(self, ours: Entity, theirs: Entity) -> bytes:
        """Both sides added one statement, each at a place of its own (`gaps.added_apart`):
        once loses one side's, twice may run it twice; the author decides."""
        label = f"{ours.label}, added by both at different places"
        merged = render(
            [Clash((), (ours.text,), (theirs.text,))], label=label, marker_size=self.marker_size
        )
        hunks = tuple(_hunk(c) for c in merged.clashes)
        conflict = EntityConflict(
            kind=ours.kind, name=ours.display_name, reason="both-added", hunks=hunks
        )
        self.conflicts.append(conflict)
        return _concat([ours.gap, merged.content])

    def clash(self, base: Entity, ours: tuple[Entity, ...], theirs: tuple[Entity, ...]) -> bytes:
        """A base entity both sides replaced differently (or one dropped): both, marked."""
        ours_text = _concat([e.text for e in ours])
        theirs_text = _concat([e.text for e in theirs])
        reason: ConflictReason = "both-modified"
        if not ours:
            reason = "delete-modify"
        elif not theirs:
            reason = "modify-delete"
        label = f"{base.label}, replaced"
        merged = render(
            [Clash(base=(base.text,), ours=_piece(ours_text), theirs=_piece(theirs_text))],
            label=label,
            marker_size=self.marker_size,
        )
        hunk = ConflictHunk(base=_text(base.text), ours=_text(ours_text), theirs=_text(theirs_text))
        self.conflicts.append(
            EntityConflict(kind=base.kind, name=base.display_name, reason=reason, hunks=(hunk,))
        )
        gap = (ours or theirs)[0].gap
        return _concat([gap, merged.content])

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
