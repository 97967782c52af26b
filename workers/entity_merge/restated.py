"""One-line statements a merge holds more often than either side wrote them.

The entity matching keys an unnamed statement, or an added import or export, by its
text. Two sides adding one statement in forms that differ only in spacing or a trailing
semicolon are therefore two entities, and both survive: the statement runs, or is
declared, twice although each side meant it once. Found blind in the fourth held-out set
(rxjs's src/internal/util/workarounds.ts): ours added ``export {};`` right under the
file's opening comment, theirs ``export {}`` a blank line below it, and the merge kept
both. Identical additions are one entity already; this finds those alike only.

Only statements on one line of the file's top level are counted: there a statement
written twice is a repetition, whereas a line inside two different functions or tests
(``assert result == 0``) is each one's own.
"""

from __future__ import annotations

from collections import Counter

from tree_sitter import Node

__all__ = ["restated"]


def _form(text: bytes) -> bytes:
    """A statement as the comparison sees it: spacing collapsed, a final ``;`` dropped."""
    return b" ".join(text.split()).rstrip(b";").rstrip()


def _one_liners(root: Node, content: bytes, attached: frozenset[str]) -> Counter[bytes]:
    """The top-level statements of `root` (parsed from `content`) written on one line, by
    form, with how often each occurs. Nodes of the `attached` types (comments, Rust's
    ``#[test]`` attributes: the language's ``LanguageSpec.attached``) belong to the
    statement below them and are not counted: two new tests each carry a ``#[test]``."""
    counted: Counter[bytes] = Counter()
    for node in root.named_children:
        start, end = node.start_point, node.end_point
        # A node that swallows its final newline ends at column 0 of the next row.
        one_line = end.row == start.row or (end.column == 0 and end.row == start.row + 1)
        if one_line and node.type not in attached and "comment" not in node.type:
            form = _form(content[node.start_byte : node.end_byte])
            if form:
                counted[form] += 1
    return counted


def restated(
    ours: tuple[Node, bytes],
    theirs: tuple[Node, bytes],
    merged: tuple[Node, bytes],
    *,
    attached: frozenset[str],
) -> bytes | None:
    """A one-line top-level statement the merge holds more often than ours or theirs
    does, or None. Each version is given as its syntax tree's root and its text."""
    held = _one_liners(*merged, attached)
    twice = [form for form, n in held.items() if n > 1]
    if not twice:
        return None
    mine, yours = _one_liners(*ours, attached), _one_liners(*theirs, attached)
    return next((f for f in twice if held[f] > max(mine[f], yours[f])), None)
