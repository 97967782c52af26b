"""Two sides adding different entries at one place of a keyed literal: both are kept.

A dictionary, an object literal, a Go composite literal or a Rust struct expression
often grows by one line per key: a new setting, a new translation, a new handler.
When both sides add a key at the same place, a line merge sees two insertions with no
unchanged line between them and calls it a clash, yet neither entry says anything
about the other: looking a key up does not depend on where it stands. Such a clash is
settled by keeping both sides' entries, ours first.

The text rule (`merge_entries`) only sees lines: each inserted line must be one whole
``key: value,`` entry with balanced brackets, and no key may be added by both sides.
Lines look the same in places where order does matter (a parameter ``x: int,`` of a
Python or TypeScript signature), so the merged file's tree has the last word
(`misplaced_entries`): every joined line must be one entry of a keyed literal of the
language (`LanguageSpec.keyed_entries`), on one line, in a literal whose keys are all
different. Otherwise the merge is refused as a conflict.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tree_sitter import Node

from .languages import LanguageSpec

__all__ = ["entry_key", "merge_entries", "misplaced_entries"]

# A key (a name or a quoted string), a colon, a value on the same line, a trailing comma.
_ENTRY = re.compile(
    rb"""^[ \t]*(?P<key>"[^"\\\n]*"|'[^'\\\n]*'|[A-Za-z_$][\w$]*)[ \t]*:[ \t]*\S.*,[ \t]*\r?\n?$"""
)
_OPENING, _CLOSING = b"([{", b")]}"


def _balanced(line: bytes) -> bool:
    # A value that opens a bracket it does not close continues on the next line: the
    # line is then only the start of an entry.
    return sum(map(line.count, _OPENING)) == sum(map(line.count, _CLOSING))


def entry_key(line: bytes) -> bytes | None:
    """The key of a one-line ``key: value,`` entry, quotes taken off, or None."""
    found = _ENTRY.match(line)
    if found is None or not _balanced(line):
        return None
    return found["key"].strip(b"\"'")


def _keys(lines: Iterable[bytes]) -> list[bytes] | None:
    keys = []
    for line in lines:
        key = entry_key(line)
        if key is None:
            return None
        keys.append(key)
    return keys


def merge_entries(base: list[bytes], ours: list[bytes], theirs: list[bytes]) -> list[bytes] | None:
    """Both sides' lines, ours first, when each side only inserted entries of new keys.

    None unless the clash is a pure insertion on both sides (nothing of the base
    between them) of one-line entries, with no key twice among them.
    """
    if base or not ours or not theirs:
        return None
    keys = _keys([*ours, *theirs])
    if keys is None or len(set(keys)) != len(keys):
        return None
    return [*ours, *theirs]


def _line_starts(content: bytes, line: bytes) -> list[int]:
    """Where `line` (a whole line) starts in `content`, every time."""
    found, at = [], content.find(line)
    while at != -1:
        if at == 0 or content[at - 1 : at] == b"\n":
            found.append(at)
        at = content.find(line, at + 1)
    return found


def _key_text(entry: Node) -> bytes:
    key = entry.child_by_field_name("key") or entry.child_by_field_name("field")
    if key is None:
        key = entry.named_children[0] if entry.named_children else entry
    return (key.text or b"").strip(b"\"'`")


def _entry_at(spec: LanguageSpec, root: Node, start: int, stop: int) -> Node | None:
    """The keyed-literal entry that is the whole of the line `start:stop`, or None."""
    node = root.named_descendant_for_byte_range(start, start + 1)
    while node is not None and node.start_byte == start:
        parent = node.parent
        if parent is not None and (node.type, parent.type) in spec.keyed_entries:
            # The entry and its comma end the line: the entry is the whole line.
            one_line = node.end_point.row == node.start_point.row
            return node if one_line and node.end_byte <= stop else None
        node = parent
    return None


def misplaced_entries(
    spec: LanguageSpec, root: Node, content: bytes, joined: Iterable[bytes]
) -> str | None:
    """Why a merged file's joined entry lines are not all entries of keyed literals."""
    for line in set(joined):
        indent = len(line) - len(line.lstrip())
        for start in _line_starts(content, line):
            entry = _entry_at(spec, root, start + indent, start + len(line))
            if entry is None:
                shown = line.strip().decode("utf-8", "replace")
                return f"joins {shown!r} from both sides outside a literal of keys"
            literal = entry.parent
            assert literal is not None
            keys = [
                _key_text(child)
                for child in literal.named_children
                if (child.type, literal.type) in spec.keyed_entries
            ]
            if len(set(keys)) != len(keys):
                shown = line.strip().decode("utf-8", "replace")
                return f"joins {shown!r} into a literal that then holds one key twice"
    return None
