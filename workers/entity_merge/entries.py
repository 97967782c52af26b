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
language (`LanguageSpec.keyed_entries`), alone on its line, in a literal whose keys are
all written out (no spread, shorthand, method or computed key; in a Python dictionary
or a Go map only quoted keys, since a bare name there is a variable; no Go array or
slice, whose index keys place the elements after them) and all different. Otherwise
the merge is refused as a conflict.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tree_sitter import Node

from .languages import LanguageSpec

__all__ = ["entry_key", "line_starts", "merge_entries", "misplaced_entries"]

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


def line_starts(content: bytes, line: bytes) -> list[int]:
    """Where `line` (a whole line) starts in `content`, every time."""
    found, at = [], content.find(line)
    while at != -1:
        if at == 0 or content[at - 1 : at] == b"\n":
            found.append(at)
        at = content.find(line, at + 1)
    return found


# A key written as a string: its quotes, and Python's prefixes (`u'b'` is `'b'`).
_QUOTED = re.compile(rb"""^[A-Za-z]{0,2}(["'`])(.*)\1$""", re.DOTALL)
# Literal node types whose bare-name keys are values, not names: a Python dictionary's
# `{a: 1}` keys by what the variable `a` holds, so two names can be one key.
_NAMES_ARE_VALUES = frozenset({"dictionary"})
# Go literals whose keys are not field names: a map's bare names are variables, an
# array's or a slice's keys are indexes that place the unkeyed elements after them.
_GO_MAPS = frozenset({"map_type"})
_GO_STRUCTS = frozenset({"type_identifier", "qualified_type", "generic_type"})


def _key_of(entry: Node) -> tuple[bytes, bool] | None:
    """An entry's key, quotes and prefixes off, and whether it was written quoted.

    None for a key computed at run time (`[name]: …`), which may be any key.
    """
    key = entry.child_by_field_name("key") or entry.child_by_field_name("field")
    if key is None:
        key = entry.named_children[0] if entry.named_children else entry
    if key.type == "computed_property_name":
        return None
    text = (key.text or b"").strip()
    quoted = _QUOTED.match(text)
    return (quoted[2], True) if quoted else (text, False)


def _keys_known(spec: LanguageSpec, literal: Node) -> list[bytes] | None:
    """Every key of `literal`, or None when one of them cannot be told from the text.

    Anything but plain entries (a spread, a shorthand property, a method, a computed
    key) may set a key the entries do not show; a name that stands for a value may
    equal another key; a Go array's index keys move the elements after them.
    """
    if literal.type == "literal_value":
        typed = literal.parent.child_by_field_name("type") if literal.parent else None
        kind = typed.type if typed is not None else None
        if kind not in _GO_STRUCTS | _GO_MAPS:
            return None
    else:
        kind = literal.type
    keys = []
    for child in literal.named_children:
        if "comment" in child.type:
            continue
        if (child.type, literal.type) not in spec.keyed_entries:
            return None
        written = _key_of(child)
        if written is None:
            return None
        key, quoted = written
        if not quoted and (kind in _NAMES_ARE_VALUES or kind in _GO_MAPS):
            return None
        keys.append(key)
    return keys


def _entry_at(spec: LanguageSpec, root: Node, start: int, stop: int) -> Node | None:
    """The keyed-literal entry that is the whole of the line `start:stop`, or None."""
    node = root.named_descendant_for_byte_range(start, start + 1)
    while node is not None and node.start_byte == start:
        parent = node.parent
        if parent is not None and (node.type, parent.type) in spec.keyed_entries:
            # The entry and its comma end the line: the entry is the whole line.
            one_line = node.end_point.row == node.start_point.row
            rest = node.next_sibling
            ends_line = rest is None or rest.type != "," or rest.end_byte <= stop
            following = rest.next_sibling if rest is not None and rest.type == "," else None
            alone = following is None or following.start_point.row > node.start_point.row
            return node if one_line and node.end_byte <= stop and ends_line and alone else None
        node = parent
    return None


def misplaced_entries(
    spec: LanguageSpec, root: Node, content: bytes, joined: Iterable[bytes]
) -> str | None:
    """Why a merged file's joined entry lines are not all entries of keyed literals.

    The lines are judged in the order given, each once, so the reason names the same
    line in every run (a set's order of bytes changes with the interpreter's hash seed).
    """
    for line in dict.fromkeys(joined):
        indent = len(line) - len(line.lstrip())
        for start in line_starts(content, line):
            entry = _entry_at(spec, root, start + indent, start + len(line))
            if entry is None:
                shown = line.strip().decode("utf-8", "replace")
                return f"joins {shown!r} from both sides outside a literal of keys"
            literal = entry.parent
            assert literal is not None
            keys = _keys_known(spec, literal)
            if keys is None:
                shown = line.strip().decode("utf-8", "replace")
                return f"joins {shown!r} into a literal whose keys are not all written out"
            if len(set(keys)) != len(keys):
                shown = line.strip().decode("utf-8", "replace")
                return f"joins {shown!r} into a literal that then holds one key twice"
    return None
