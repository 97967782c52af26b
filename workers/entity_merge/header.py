"""A comment one side put at the very top of a file stays at the top.

A side that writes new comment lines at line 1 (a test's ``# flags: …`` line, a licence,
a tool's directive) says something about the file. When that comment is glued to the
first entity, the entity merge takes it for that entity's own and carries it along, so
the other side's additions above that entity push it down into the file. Found blind in
the eighth held-out set (black's tests/data/cases/raw_docstring_no_string_normalization.py):
theirs added ``# flags: --skip-string-normalization`` as line 1, ours added 105 lines of
test input above the first function, and the flag ended up on line 106, where black's test
harness no longer reads it.
"""

from __future__ import annotations

from tree_sitter import Node

__all__ = ["displaced_header"]


def _header(root: Node, content: bytes) -> bytes:
    """The comment lines that open `content` (parsed as `root`), from line 1 on."""
    row, end = 0, 0
    for node in root.children:
        if "comment" not in node.type or node.start_point.row != row:
            break
        row, end = node.end_point.row + 1, node.end_byte
    return content[:end]


def displaced_header(
    base: bytes, sides: tuple[tuple[Node, bytes], tuple[Node, bytes]], merged: bytes
) -> bytes | None:
    """The opening comment one side wrote anew, if the merge does not open with it.

    `sides` are ours and theirs, each as its syntax tree's root and its text.
    """
    for root, content in sides:
        header = _header(root, content)
        if header.strip() and not base.startswith(header) and not merged.startswith(header):
            return header
    return None
