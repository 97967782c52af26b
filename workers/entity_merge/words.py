"""A second, finer look at a clash: the same three-way merge over words.

A line merge calls two edits of neighbouring lines a clash because no unchanged line
lies between them, and an edit inside a block a clash with the other side's
re-indenting of that block. Splitting the disputed lines into words, runs of white
space and single punctuation marks and merging those settles both. Two sides that
rewrote one line (beyond its layout) still clash, even in different words of it: on
real history such pairs were two fixes of one condition, two halves of a version
string, or one side's edit copied into the other's commented-out line.

Only the entity merge asks for this: its result is parsed again and checked for
doubled declarations, imports and lines before it counts as clean, and a word merge
that breaks the syntax is caught there.
"""

from __future__ import annotations

import re
from collections import Counter

from .line_merge import Clash, matching_blocks, merge3, split_lines

__all__ = ["merge_words"]

# A word is a run of ASCII word characters or of non-ASCII bytes (so a UTF-8
# character is never split between two sides' edits); white space runs, newlines and
# indentation included, are tokens of their own, so re-indenting a block and editing
# a word inside it are separate edits.
_TOKEN = re.compile(rb"\s+|[\w\x80-\xff]+|[^\w\s\x80-\xff]")

# Beyond this many tokens a clash is a rewrite, not two edits of a statement; the
# word merge would only weave two rewrites together, and Myers' cost grows with it.
_MAX_TOKENS = 4000


def _tokens(lines: list[bytes]) -> list[bytes]:
    return _TOKEN.findall(b"".join(lines))


# A name, as opposed to a number, a literal or punctuation.
_NAME = re.compile(rb"[A-Za-z_\x80-\xff][\w\x80-\xff]*")
_LITERALS = frozenset(
    {b"true", b"false", b"True", b"False", b"null", b"None", b"nil", b"undefined"}
)


def _doubled(merged: list[bytes], ours: list[bytes], theirs: list[bytes]) -> bool:
    """Whether a name occurs in `merged` more often than on either side.

    Then both sides brought it in, each at its own place: one change made twice (a
    `.to_dict()` one side added where a value is read and the other where it is
    made, now called twice). Two sides may also have used one name for different
    reasons; refusing those costs a conflict, never a wrong merge. Literals such as
    `true` are left out: two settings each turned on are two changes.
    """
    counts = Counter(t for t in merged if _NAME.fullmatch(t) and t not in _LITERALS)
    o, t = Counter(ours), Counter(theirs)
    return any(n > max(o[name], t[name]) for name, n in counts.items())


def _layout_free(line: bytes) -> bytes:
    return b" ".join(line.split())


# A side's edit of a region: base lines [start, stop) replaced by these lines.
_Hunk = tuple[int, int, list[bytes]]


def _hunks(base: list[bytes], side: list[bytes]) -> list[_Hunk]:
    """`side`'s edits of `base`, compared with layout (indentation, spacing) aside."""
    found: list[_Hunk] = []
    i = j = 0
    for start, side_start, size in matching_blocks(base, side):
        if start > i or side_start > j:
            found.append((i, start, side[j:side_start]))
        i, j = start + size, side_start + size
    return found


def _touched(hunks: list[_Hunk]) -> set[int]:
    """The base lines the hunks change, and for an insertion the lines on both sides.

    -1 and the region's length stand for its edges. A line added next to a line the
    other side changed is as much one edit of that statement as a change to it (on
    real history: a second fix appended to a condition the other side rewrote; a
    test inserted above the one the other side edited, whose words then went to the
    wrong copy).
    """
    touched: set[int] = set()
    for start, stop, _ in hunks:
        touched.update(range(start, stop) if stop > start else (start - 1, start))
    return touched


def _applied(base: list[bytes], hunks: list[_Hunk]) -> list[bytes]:
    """`base` with hunks that touch no common line applied."""
    out: list[bytes] = []
    at = 0
    for start, stop, lines in sorted(hunks, key=lambda hunk: hunk[:2]):
        out += base[at:start] + lines
        at = stop
    return out + base[at:]


def merge_words(base: list[bytes], ours: list[bytes], theirs: list[bytes]) -> list[bytes] | None:
    """The lines of a clean word-level merge of one clashing region, or None.

    None when both sides changed one line or one put a line next to a line the other
    changed, when the words clash, when a name would occur more often than on either
    side, or when the region is too large to be one statement's edits.
    """
    plain = [[_layout_free(line) for line in lines] for lines in (base, ours, theirs)]
    ours_hunks, theirs_hunks = _hunks(plain[0], plain[1]), _hunks(plain[0], plain[2])
    if _touched(ours_hunks) & _touched(theirs_hunks):
        # Both sides rewrote one line: the words of two edits of one statement, one
        # string or one comment do not combine into anything either side meant (a
        # version "1.14.dev" against "1.13.0" is not "1.14.0"; a fix appended to a
        # condition the other side rewrote runs both fixes).
        return None
    b, o, t = _tokens(base), _tokens(ours), _tokens(theirs)
    if len(b) + len(o) + len(t) > _MAX_TOKENS:
        return None
    settled: list[bytes] = []
    for chunk in merge3(b, o, t):
        if isinstance(chunk, Clash):
            return None
        settled.extend(chunk.lines)
    if _doubled(settled, o, t):
        return None
    merged = split_lines(b"".join(settled))
    # The words must say what the lines say: each side's lines, layout aside, where
    # that side changed them. Two alike lines can pull a word alignment across lines.
    expected = _applied(plain[0], ours_hunks + theirs_hunks)
    if [_layout_free(line) for line in merged] != expected:
        return None
    return merged
