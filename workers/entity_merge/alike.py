"""Where a change both sides made alike may not be taken as made alike.

`words.said_alike` compares two sides' lines with spacing set aside where it is layout,
and a line alone cannot tell that it sits inside a string spanning lines (a docstring,
a template literal, a Go raw string): there its spacing is content, and taking ours'
line would drop what theirs wrote. The merged file's tree can tell.
"""

from __future__ import annotations

from collections.abc import Iterable

from tree_sitter import Node

from .entries import line_starts

__all__ = ["alike_inside_text"]


def _is_text(node: Node) -> bool:
    # Strings and templates of every grammar here (string, string_content,
    # raw_string_literal, template_string, text_block …): spacing in them is content.
    return "string" in node.type or "template" in node.type or node.type == "text_block"


def alike_inside_text(root: Node, content: bytes, taken: Iterable[bytes]) -> str | None:
    """Why a line taken as made alike lies inside a string spanning lines, or None."""
    for line in set(taken):
        body = line.strip()
        if not body:
            continue
        offset = line.index(body[:1])
        for start in line_starts(content, line):
            node: Node | None = root.named_descendant_for_byte_range(
                start + offset, start + offset + len(body)
            )
            while node is not None:
                if _is_text(node) and node.end_point.row > node.start_point.row:
                    shown = body.decode("utf-8", "replace")
                    return f"takes {shown!r} as written alike inside a string spanning lines"
                node = node.parent
    return None
