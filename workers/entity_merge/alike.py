"""Where spacing a line merge set aside as layout was content: a string spanning lines.

`words.said_alike` and the word merge compare lines with spacing and indentation set
aside where they are layout, and a line alone cannot tell that it sits inside a string
spanning lines (a docstring, a template literal, a Go raw string, a Java text block):
there its spacing is content. Taking ours' line as theirs written alike would drop what
theirs wrote; combining one side's re-spacing or re-indenting of the line with the
other side's word edit of it would merge two rewrites of one line of text. The merged
file's tree can tell where its strings are.
"""

from __future__ import annotations

from collections.abc import Iterable

from tree_sitter import Node

from .entries import line_starts

__all__ = ["line_inside_text"]


# Code inside a string: a JavaScript/TypeScript `${…}`, a Python f-string's `{…}`. A
# line there is code, whatever string it sits in, so the walk up stops at it.
_CODE_IN_TEXT = frozenset({"template_substitution", "interpolation"})

# Nodes named like strings that are not text: Python's implicit concatenation of
# one-line strings across lines has code (layout) between its strings.
_NOT_TEXT = frozenset({"concatenated_string"})


def _is_text(node: Node) -> bool:
    # Strings and templates of every grammar here (string, string_content,
    # raw_string_literal, template_string, text_block …): spacing in them is content.
    if node.type in _NOT_TEXT:
        return False
    return "string" in node.type or "template" in node.type or node.type == "text_block"


def line_inside_text(root: Node, content: bytes, lines: Iterable[bytes]) -> bytes | None:
    """The first of `lines` that `content` (parsed as `root`) holds inside a string
    spanning lines, or None."""
    for line in set(lines):
        body = line.strip()
        if not body:
            continue
        offset = line.index(body[:1])
        for start in line_starts(content, line):
            node: Node | None = root.named_descendant_for_byte_range(
                start + offset, start + offset + len(body)
            )
            while node is not None and node.type not in _CODE_IN_TEXT:
                if _is_text(node) and node.end_point.row > node.start_point.row:
                    return line
                node = node.parent
    return None
