"""One-line statements a merge holds in two spellings, more often than either side.

The entity matching keys an unnamed statement, or an added import or export, by its
text. Two sides adding one statement in forms that differ only in spacing, quotes or a
trailing semicolon are therefore two entities, and both survive: the statement runs, or
is declared, twice although each side meant it once. Found blind in the fourth held-out
set (rxjs's src/internal/util/workarounds.ts): ours added ``export {};`` right under
the file's opening comment, theirs ``export {}`` a blank line below it, and the merge
kept both.

Only statements on one line of the file's top level are counted: there a statement
written twice is a repetition, whereas a line inside two different functions or tests
(``assert result == 0``) is each one's own. And only where the merge holds the statement
in more than one spelling: two sides changing two different lines into one same line
(``time.sleep(2)``) is two edits that agree, not one addition made twice.
"""

from __future__ import annotations

from collections import Counter

from tree_sitter import Node

__all__ = ["restated"]


def _form(text: bytes) -> bytes:
    """A statement as the comparison sees it: spacing collapsed, one kind of quote, a final
    ``;`` dropped."""
    return b" ".join(text.split()).replace(b"'", b'"').rstrip(b";").rstrip()


def _one_liners(
    root: Node, content: bytes, attached: frozenset[str]
) -> tuple[Counter[bytes], dict[bytes, set[bytes]]]:
    """The top-level statements of `root` (parsed from `content`) written on one line, by
    form: how often each occurs, and the spellings it occurs in. Nodes of the `attached`
    types (comments, Rust's ``#[test]`` attributes: the language's
    ``LanguageSpec.attached``) belong to the statement below them and are not counted:
    two new tests each carry a ``#[test]``."""
    counted: Counter[bytes] = Counter()
    spellings: dict[bytes, set[bytes]] = {}
    for node in root.named_children:
        start, end = node.start_point, node.end_point
        # A node that swallows its final newline ends at column 0 of the next row.
        one_line = end.row == start.row or (end.column == 0 and end.row == start.row + 1)
        if one_line and node.type not in attached and "comment" not in node.type:
            text = content[node.start_byte : node.end_byte].strip()
            form = _form(text)
            if form:
                counted[form] += 1
                spellings.setdefault(form, set()).add(text)
    return counted, spellings


def restated(
    ours: tuple[Node, bytes],
    theirs: tuple[Node, bytes],
    merged: tuple[Node, bytes],
    *,
    attached: frozenset[str],
) -> bytes | None:
    """A one-line top-level statement the merge holds in more than one spelling and more
    often than ours or theirs does, or None. Each version is given as its syntax tree's
    root and its text."""
    held, spellings = _one_liners(*merged, attached)
    twice = [form for form, n in held.items() if n > 1 and len(spellings[form]) > 1]
    if not twice:
        return None
    mine, yours = _one_liners(*ours, attached)[0], _one_liners(*theirs, attached)[0]
    return next((f for f in twice if held[f] > max(mine[f], yours[f])), None)
