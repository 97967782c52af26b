"""Entity-level three-way merge.

Each version is cut into entities (see `entities`). Entities are matched across
base, ours and theirs by key; a one-sided change is taken, an entity both sides
changed is merged by lines inside that entity (or member by member if it is a
container), independent additions are all kept, and only a true collision — the
same lines of one entity, or one side changing what the other deleted — becomes a
conflict, marked with the entity's name (`regions`). Anything the entity merge cannot
handle falls back to a plain three-way line merge, and a clean result that does not
parse, or binds a name more often than either side did, is reported as a conflict
rather than written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import msgspec
from tree_sitter import Node, Tree

from .alike import line_inside_text
from .data_merge import data_merger_for
from .doubled import LineCounts, normalised, repeated_lines, revived_lines
from .entities import NotSplittable, extract
from .entries import misplaced_entries
from .header import displaced_header
from .import_repair import without_extra_imports
from .imports import import_fault, import_map
from .languages import LanguageSpec, language_for_path
from .line_endings import Ending, converted_to, in_lf, written_in
from .line_merge import split_lines
from .ordering import Reordered
from .refusal import binary_result, duplicated, is_binary, refused
from .regions import Merger
from .reparse import reparse
from .restated import restated
from .result import ConflictHunk, ConflictReason, MergeResult

__all__ = ["merge_file"]


def _line_result(
    base: bytes,
    ours: bytes,
    theirs: bytes,
    path: str,
    spec: LanguageSpec | None,
    *,
    note: str,
    marker_size: int,
) -> MergeResult:
    """A plain three-way line merge of the whole file (not yet checked)."""
    merger = Merger(marker_size)
    content = merger.lines(base, ours, theirs, kind="file", name=path)
    language = spec.name if spec is not None else None
    return MergeResult(
        content=content,
        conflicts=tuple(merger.conflicts),
        strategy="line",
        language=language,
        note=note,
    )


@dataclass(frozen=True, slots=True)
class _Inputs:
    """The three versions of one file, what parses them, and the sides' trees."""

    base: bytes
    ours: bytes
    theirs: bytes
    path: str
    spec: LanguageSpec
    marker_size: int
    base_tree: Tree
    ours_tree: Tree
    theirs_tree: Tree
    ours_lines: list[bytes]

    def line_merge(self, note: str) -> MergeResult:
        """The whole file merged by lines, unchecked."""
        return _line_result(
            self.base,
            self.ours,
            self.theirs,
            self.path,
            self.spec,
            note=note,
            marker_size=self.marker_size,
        )

    def fault(
        self,
        content: bytes,
        joined: tuple[bytes, ...] = (),
        alike: tuple[bytes, ...] = (),
        worded: tuple[bytes, ...] = (),
        respaced: tuple[bytes, ...] = (),
    ) -> tuple[ConflictReason, str] | None:
        """Why a clean merge of these inputs must not be written, or None if it may.

        `joined`: lines the merge kept from both sides as entries of keyed literals;
        `alike`: ours' lines it took for theirs written with other spacing; `worded`:
        lines the word merge made of one side's words and the other's spacing;
        `respaced`: those of `alike` whose sides spaced their words differently.
        """
        parser = self.spec.parser()
        tree, start, end = reparse(
            parser, self.ours_tree, self.ours_lines, split_lines(content), content
        )
        root = tree.root_node
        if self.spec.broken(root, start, end):
            return "result-unparseable", "does not parse"
        if self.spec.miscompiles is not None:
            error = self.spec.miscompiles(self.ours, self.theirs, content)
            if error is not None:
                return "result-unparseable", f"does not compile ({error})"
        if joined:
            misplaced = misplaced_entries(self.spec, root, content, joined)
            if misplaced is not None:
                return "both-added", misplaced
        for lines, what in (
            (alike, "as written alike"),
            (worded, "as one side's words with the other side's spacing"),
        ):
            inside = line_inside_text(root, content, lines) if lines else None
            if inside is None and what == "as written alike" and respaced:
                # Between the words of a comment spacing is prose too (not its indent).
                inside = line_inside_text(root, content, respaced, comments=True)
            if inside is not None:
                shown = inside.strip().decode("utf-8", "replace")
                where = "inside a string or comment spanning lines"
                return "both-modified", f"takes {shown!r} {what} {where}"
        names = duplicated(self.spec, root, self.ours_tree.root_node, self.theirs_tree.root_node)
        if names:
            return "duplicate", f"repeats {', '.join(names)}"
        roots = (self.base_tree.root_node, self.ours_tree.root_node, self.theirs_tree.root_node)
        wrong = import_fault(self.spec, (*roots, root), self.path)
        if wrong is not None:
            return "both-modified", wrong
        statements = b"\n".join(content[a:b] for a, b in import_map(self.spec, root)[1])
        # The two line-count checks share one count of the four versions' lines.
        line_counts = LineCounts(self.base, self.ours, self.theirs, content)
        revived = revived_lines(line_counts, skip=normalised(statements))
        if revived:
            line = revived[0].decode("utf-8", "replace")
            return (
                "modify-delete",
                f"keeps {line!r}, one side deleted or rewrote and the other moved",
            )
        repeated = repeated_lines(line_counts)
        if repeated:
            line = repeated[0].decode("utf-8", "replace")
            return "both-modified", f"holds {line!r} twice, which every version holds once"
        placed = self.placement_fault(root, content)
        if placed is not None:
            return placed
        if self.spec.collides is not None:
            clash = self.spec.collides(*roots, root)
            if clash is not None:
                return "both-added", clash
        return None

    def placement_fault(self, root: Node, content: bytes) -> tuple[ConflictReason, str] | None:
        """Why the merge (`content`, parsed as `root`) puts one side's top-level lines
        where that side did not mean them, or None: a comment one side wrote at the top
        no longer opening the file (:mod:`.header`), or one statement written in two
        spellings held more often than either side wrote it (:mod:`.restated`)."""
        sides = ((self.ours_tree.root_node, self.ours), (self.theirs_tree.root_node, self.theirs))
        header = displaced_header(self.base, sides, content)
        if header is not None:
            shown = header.strip().splitlines()[0].decode("utf-8", "replace")
            return "both-added", f"does not open with {shown!r}, which one side put at the top"
        twice = restated(*sides, (root, content), attached=self.spec.attached)
        if twice is not None:
            shown = twice.decode("utf-8", "replace")
            return "both-added", f"holds {shown!r} more often than either side wrote it"
        return None

    def repaired(self, content: bytes) -> bytes | None:
        """`content` with imports cut down to the three-way merge of imports, if it can be."""
        roots = (self.base_tree.root_node, self.ours_tree.root_node, self.theirs_tree.root_node)
        merged = self.spec.parser().parse(content).root_node
        return without_extra_imports(self.spec, (*roots, merged), content)

    def checked(
        self,
        result: MergeResult,
        *,
        retry: bool,
        joined: tuple[bytes, ...] = (),
        alike: tuple[bytes, ...] = (),
        worded: tuple[bytes, ...] = (),
        respaced: tuple[bytes, ...] = (),
    ) -> MergeResult:
        """`result` if it is a conflict or sound; else a line merge, or a refusal.

        A faulty entity merge (`retry`) gets one more chance as a plain line merge,
        which may not glue the same pieces together. If that one conflicts, its hunks
        are the evidence, but the reason stays the fault: without it the entity merge
        would have been clean.
        """
        if not result.clean:
            return result
        fault = self.fault(result.content, joined, alike, worded, respaced)
        if fault is None:
            return result
        repaired = self.repaired(result.content)
        if repaired is not None and self.fault(repaired, joined, alike, worded) is None:
            note = "names the merge of imports drops were taken out of their lists"
            return msgspec.structs.replace(result, content=repaired, note=note)
        reason, why = fault
        if retry:
            said = "did not parse" if reason == "result-unparseable" else why
            line = self.line_merge(f"the entity merge result {said}")
            if not line.clean:
                return msgspec.structs.replace(
                    line,
                    conflicts=tuple(
                        msgspec.structs.replace(c, reason=reason) for c in line.conflicts
                    ),
                )
            if self.fault(line.content) is None:
                return line
        return refused(
            self.base,
            self.ours,
            self.theirs,
            self.path,
            self.spec,
            self.marker_size,
            reason=reason,
            why=f"merged result {why}",
            note=f"{result.note or 'entity merge'}; the merged result {why}",
        )


def merge_file(
    base: bytes, ours: bytes, theirs: bytes, path: str, *, marker_size: int = 7
) -> MergeResult:
    """Three-way merge of one file's three versions; `path` picks the language.

    Pure: no I/O, no git. `base` is empty for a file both sides added. A ``.toml``,
    ``.json``, ``.yaml`` or ``.yml`` file is merged by key and element
    (:mod:`.toml_merge`, :mod:`.data_merge`). Otherwise the result is
    entity-merged when the extension has a grammar and all three versions parse,
    line-merged otherwise (see `MergeResult.note` for why). A clean result is checked
    before it is returned: it must parse, must not bind a name more often than either
    side did, must import what the three-way merge of the sides' imports says
    (:mod:`.imports`) and must not keep a line more often than the sides' changes allow
    (:mod:`.doubled`), or it becomes a conflict.
    """
    if any(is_binary(data) for data in (base, ours, theirs)):
        return binary_result(base, ours, theirs, path)
    ending = converted_to(base, ours, theirs)
    if ending is not None:
        result = _merge_text(in_lf(base), in_lf(ours), in_lf(theirs), path, marker_size)
        return _written_in(ending, result)
    return _merge_text(base, ours, theirs, path, marker_size)


def _written_in(ending: Ending, result: MergeResult) -> MergeResult:
    """`result` (merged in LF) with its content and its conflicts' hunks in `ending`.

    The hunks are what an author is shown of each conflict; in another ending than the
    file's they would not be found in it.
    """

    def text(hunk_text: str) -> str:
        return hunk_text.replace("\n", "\r\n") if ending == "crlf" else hunk_text

    conflicts = tuple(
        msgspec.structs.replace(
            conflict,
            hunks=tuple(
                ConflictHunk(base=text(h.base), ours=text(h.ours), theirs=text(h.theirs))
                for h in conflict.hunks
            ),
        )
        for conflict in result.conflicts
    )
    return msgspec.structs.replace(
        result, content=written_in(ending, result.content), conflicts=conflicts
    )


def _merge_text(
    base: bytes, ours: bytes, theirs: bytes, path: str, marker_size: int
) -> MergeResult:
    """`merge_file` of three text versions whose line endings need no conversion."""
    spec = language_for_path(path)
    data_merge = data_merger_for(path)
    if data_merge is not None:
        return data_merge(base, ours, theirs, path, marker_size)
    if spec is None:
        ext = os.path.splitext(path)[1] or path
        return _line_result(
            base,
            ours,
            theirs,
            path,
            None,
            note=f"no entity grammar for {ext!r}",
            marker_size=marker_size,
        )
    lines = [split_lines(data) for data in (base, ours, theirs)]
    trees = _parse_sides(spec, (base, ours, theirs), lines)
    if isinstance(trees, str):
        return _line_result(
            base,
            ours,
            theirs,
            path,
            spec,
            note=f"{trees} does not parse as {spec.name}",
            marker_size=marker_size,
        )
    if ours == theirs or theirs == base:
        return MergeResult(content=ours, conflicts=(), strategy="entity", language=spec.name)
    if ours == base:
        return MergeResult(content=theirs, conflicts=(), strategy="entity", language=spec.name)
    inputs = _Inputs(
        base, ours, theirs, path, spec, marker_size, trees[0], trees[1], trees[2], lines[1]
    )
    try:
        base_region, ours_region, theirs_region = (
            extract(tree.root_node, its_lines, spec)
            for tree, its_lines in zip(trees, lines, strict=True)
        )
    except NotSplittable as exc:
        return inputs.checked(inputs.line_merge(f"statements share a line ({exc})"), retry=False)
    merger = Merger(marker_size, spec)
    try:
        content = merger.region(base_region, ours_region, theirs_region, where=f"file {path}")
    except Reordered:
        line = inputs.line_merge("both sides reordered entities differently")
        return inputs.checked(line, retry=False)
    result = MergeResult(
        content=content, conflicts=tuple(merger.conflicts), strategy="entity", language=spec.name
    )
    return inputs.checked(
        result,
        retry=True,
        joined=tuple(merger.joined),
        alike=tuple(merger.alike),
        worded=tuple(merger.worded),
        respaced=tuple(merger.respaced),
    )


def _parse_sides(
    spec: LanguageSpec, datas: tuple[bytes, bytes, bytes], lines: list[list[bytes]]
) -> list[Tree] | str:
    """The three versions' syntax trees, or the name of the first side that does not parse.

    The sides are parsed as edits of the base, and only their edits are re-checked.
    """
    parser = spec.parser()
    trees: list[Tree] = []
    for side, data, its_lines in zip(("base", "ours", "theirs"), datas, lines, strict=True):
        if trees:
            tree, start, end = reparse(parser, trees[0], lines[0], its_lines, data)
        else:
            tree, start, end = parser.parse(data), 0, None
        if spec.broken(tree.root_node, start, end):
            return side
        trees.append(tree)
    return trees
