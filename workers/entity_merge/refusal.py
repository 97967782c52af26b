"""Whole-file answers: binary files, and clean-looking merges the driver refuses.

A merge is refused when every piece merged and the file they make is still wrong in
a way the driver can see: it does not parse, or it binds a name (a declaration, an
import, an export) more often than either side did — the mark of two edits of one
thing both kept. The file is then handed back whole, ours against theirs, so an
author sees both versions and nothing broken is ever committed as clean.
"""

from __future__ import annotations

from collections import Counter

from tree_sitter import Node

from .languages import LanguageSpec
from .line_merge import Clash, render, split_lines
from .result import ConflictHunk, ConflictReason, EntityConflict, MergeResult

__all__ = ["binary_result", "duplicated", "is_binary", "refused"]


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _names(spec: LanguageSpec, node: Node) -> list[str]:
    """What a top-level statement is known by: the names it binds, else its first line.

    A block statement that binds nothing (an ``if``, a ``describe(…)`` call) is known
    by its first line: two sides rewriting one such block alike but not identically
    leave two blocks with the same head, and both would run.
    """
    names = spec.binds(node) if spec.binds is not None else []
    if names or node.start_point.row == node.end_point.row or node.type == "comment":
        return names
    head = (node.text or b"").split(b"\n", 1)[0].strip()
    return ["statement " + head.decode("utf-8", "replace")]


def duplicated(spec: LanguageSpec, merged: Node, ours: Node, theirs: Node) -> list[str]:
    """Names `merged` binds at top level more often than `ours` and `theirs` each do."""
    counts = [
        Counter(name for child in root.named_children for name in _names(spec, child))
        for root in (merged, ours, theirs)
    ]
    return sorted(
        name for name, n in counts[0].items() if n > max(counts[1][name], counts[2][name])
    )


def refused(
    base: bytes,
    ours: bytes,
    theirs: bytes,
    path: str,
    spec: LanguageSpec,
    marker_size: int,
    *,
    reason: ConflictReason,
    why: str,
    note: str,
) -> MergeResult:
    """The whole file as one conflict, ours against theirs, labelled with `why`."""
    merged = render(
        [Clash(base=tuple(split_lines(base)), ours=(ours,), theirs=(theirs,))],
        label=f"file {path}: {why}",
        marker_size=marker_size,
    )
    conflict = EntityConflict(
        kind="file",
        name=path,
        reason=reason,
        hunks=(ConflictHunk(base=_text(base), ours=_text(ours), theirs=_text(theirs)),),
    )
    return MergeResult(
        content=merged.content,
        conflicts=(conflict,),
        strategy="line",
        language=spec.name,
        note=note,
    )


def is_binary(data: bytes) -> bool:
    """git's own test: a NUL byte in the first 8000 bytes means "not text"."""
    return b"\0" in data[:8000]


def binary_result(base: bytes, ours: bytes, theirs: bytes, path: str) -> MergeResult:
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
