"""Where spacing a line merge set aside as layout was content: a string or a comment
spanning lines.

`words.said_alike` and the word merge compare lines with spacing and indentation set
aside where they are layout, and a line alone cannot tell that it sits inside a string
spanning lines (a docstring, a template literal, a Go raw string, a Java text block) or
a block comment: there its spacing is content. Taking ours' line as theirs written
alike would drop what theirs wrote; combining one side's re-spacing or re-indenting of
the line with the other side's word edit of it would merge two rewrites of one line of
text. The merged file's tree can tell where its strings and comments are.
"""

from __future__ import annotations

import re
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
    kind = node.type
    return "string" in kind or "template" in kind or kind == "text_block"


def _is_comment(node: Node) -> bool:
    # A comment spanning lines (comment, block_comment): the spacing between its words is
    # prose, where one side taking a double space out of a doc comment is an edit the
    # other side's layout must not undo; its indentation is layout, as code's is.
    return "comment" in node.type


_SPACING = re.compile(rb"[ \t]+")


def _in_text(node: Node | None, *, comments: bool = False) -> bool:
    """Whether `node` lies in a string spanning lines (and not in code inside it), or
    with `comments` in a comment spanning lines."""
    while node is not None and node.type not in _CODE_IN_TEXT:
        spans = node.end_point.row > node.start_point.row
        if spans and (_is_text(node) or (comments and _is_comment(node))):
            return True
        node = node.parent
    return False


def line_inside_text(
    root: Node, content: bytes, lines: Iterable[bytes], *, comments: bool = False
) -> bytes | None:
    """The first of `lines` that `content` (parsed as `root`) holds partly inside a string
    spanning lines, or None.

    Each run of spacing in the line is looked at on its own, its indentation too (and the
    line break before it, for a line with none), as is the whole line: the node around a
    whole line can be code (the call a string's last line closes, a `${…}` alone on its
    line) while the spacing the merge set aside as layout is the string's. With
    `comments`, the spacing between a line's words inside a comment spanning lines
    counts too (its indentation does not: that is layout, as code's is).
    """
    for line in dict.fromkeys(lines):  # in order: the note names the first
        body = line.rstrip(b"\r\n")
        if not body.strip():
            continue
        offset = len(body) - len(body.lstrip())
        spans = [(offset, len(body.rstrip()))]
        spans += [(m.start(), m.end()) for m in _SPACING.finditer(body)]
        # Spacing between the words of a comment line, not its indentation or its end.
        inner = [(a, b) for a, b in spans[1:] if a > 0 and b < len(body.rstrip())]
        for start in line_starts(content, line):
            # The line break before the line, when it is in a string, makes even an empty
            # indentation the string's.
            breaks = [(start - 1, start)] if start > 0 else []
            if any(
                _in_text(root.descendant_for_byte_range(a, b))
                for a, b in breaks + [(start + a, start + b) for a, b in spans]
            ) or (
                comments
                and any(
                    _in_text(root.descendant_for_byte_range(start + a, start + b), comments=True)
                    for a, b in inner
                )
            ):
                return line
    return None
