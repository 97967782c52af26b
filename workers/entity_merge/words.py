"""A second, finer look at a clash: the same three-way merge over words.

A line merge calls two edits of neighbouring lines a clash because no unchanged line
lies between them, and an edit inside a block a clash with the other side's
re-indenting of that block. Splitting the disputed lines into words, runs of white
space and single punctuation marks and merging those settles both. Two sides that
rewrote one line still clash, even in different words of it: on real history such
pairs were two fixes of one condition, two halves of a version string, or one side's
edit copied into the other's commented-out line. An indentation change clashes with
anything the other side does beside it but an in-place edit of the re-indented line:
in Python a line inserted or re-indented next to it lands at an indentation no side
wrote: a statement that silently left its block, or an `IndentationError`.

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


# The tokens a change made twice shows in: names (a call or an attribute added at two
# places), numbers (a `* 100` applied where a value is made and again where it is
# shown) and the signs that flip a value (a negation at two places cancels out). Not
# other punctuation: two sides each adding an argument add a comma each; nor a number
# that is part of a version or a decimal (`1.3.0`, `0.5`): two packages bumped each
# to a new minor version are two changes.
_COUNTED = re.compile(rb"[\w\x80-\xff]+|[-!~]")
# Literals are left out: two settings each turned on are two changes.
_LITERALS = frozenset(
    {b"true", b"false", b"True", b"False", b"null", b"None", b"nil", b"undefined"}
)


def _counted(tokens: list[bytes]) -> Counter[bytes]:
    counts: Counter[bytes] = Counter()
    for i, token in enumerate(tokens):
        if not _COUNTED.fullmatch(token) or token in _LITERALS:
            continue
        if token[:1].isdigit() and b"." in (tokens[i - 1 : i] + tokens[i + 1 : i + 2]):
            continue
        counts[token] += 1
    return counts


def _doubled(merged: list[bytes], ours: list[bytes], theirs: list[bytes]) -> bool:
    """Whether a name, number or sign occurs in `merged` more often than on either side.

    Then both sides brought it in, each at its own place: one change made twice (a
    `.to_dict()` one side added where a value is read and the other where it is
    made, now called twice). Two sides may also have used one name for different
    reasons; refusing those costs a conflict, never a wrong merge.
    """
    o, t = Counter(ours), Counter(theirs)
    return any(n > max(o[token], t[token]) for token, n in _counted(merged).items())


def _runs(base: list[bytes], side: list[bytes]) -> set[tuple[str, int, tuple[bytes, ...]]]:
    """`side`'s pure insertions and deletions of tokens: (kind, base position, words)."""
    runs: set[tuple[str, int, tuple[bytes, ...]]] = set()
    i = j = 0
    for start, side_start, size in matching_blocks(base, side):
        # A pure insertion replaces no base word; a pure deletion puts none in.
        for kind, pure, changed in (
            ("add", i == start, side[j:side_start]),
            ("cut", j == side_start, base[i:start]),
        ):
            words = tuple(token for token in changed if not token.isspace())
            if pure and words:
                runs.add((kind, i, words))
        i, j = start + size, side_start + size
    return runs


def _made_twice(base: list[bytes], ours: list[bytes], theirs: list[bytes]) -> bool:
    """Whether both sides inserted, or both deleted, the same words at different places.

    That is one change made twice: `size` turned into `size()` where it is read on
    one side and where it is used on the other calls the result; a `?`, a `*`, a `&`
    added at both ends applies twice; a sign each side dropped at its own place
    undoes both fixes. The same edit at the same place is one edit, merged once.
    """
    ours_runs, theirs_runs = _runs(base, ours), _runs(base, theirs)
    return any(
        kind == other_kind and words == other_words and at != other_at
        for kind, at, words in ours_runs
        for other_kind, other_at, other_words in theirs_runs
    )


def _indent(line: bytes) -> bytes:
    return line[: len(line) - len(line.lstrip(b" \t"))]


# A string literal on one line, or a run of white space outside one.
_STRING_OR_SPACE = re.compile(rb"""("(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`)|\s+""")


def _said(line: bytes) -> bytes:
    """What a line says: without the white space around it, runs of it inside made one
    space, except inside a string literal, where every space is what the line says.

    A formatter re-aligning a Go struct or a column of assignments changes no line's
    meaning; a side that changed `"%d  items"` to `"%d items"` changed its line.
    """
    return _STRING_OR_SPACE.sub(lambda m: m.group(1) or b" ", line.strip())


# A side's edit of a region: base lines [start, stop) replaced by these lines.
_Hunk = tuple[int, int, list[bytes]]


def _width(line: bytes) -> int:
    return len(_indent(line).expandtabs(8))


def _place(lines: list[bytes], at: int) -> tuple[int, int]:
    """How the line at `at` is indented against the nearest lines above and below
    that say something: -1 less, 0 alike, 1 more (0 where there is none)."""

    def against(step: int) -> int:
        i = at + step
        while 0 <= i < len(lines) and not lines[i].strip():
            i += step
        if not 0 <= i < len(lines):
            return 0
        here, there = _width(lines[at]), _width(lines[i])
        return (here > there) - (here < there)

    return against(-1), against(1)


class _Edits:
    """What one side did to a region's lines, its words apart from its indentation.

    `hunks` are the edits of what the lines say (compared without the white space
    that starts and ends them; spacing inside a line is what it says, since it may
    be inside a string); `indents` maps each base line the side only re-indented to
    its new indentation.
    """

    def __init__(
        self, base: list[bytes], plain_base: list[bytes], side: list[bytes], blocks_by_indent: bool
    ) -> None:
        self.base = base
        plain_side = [_said(line) for line in side]
        self.hunks: list[_Hunk] = []
        self.indents: dict[int, bytes] = {}
        # The re-indented lines still under the block they were in: moved deeper (a
        # wrap), or re-indented with their neighbours (a formatter, tabs for spaces).
        self.in_place: set[int] = set()
        i = j = 0
        for start, side_start, size in matching_blocks(plain_base, plain_side):
            if start > i or side_start > j:
                self.hunks.append((i, start, side[j:side_start]))
            for k in range(size):
                indent = _indent(side[side_start + k])
                # A blank line's indentation means nothing (trailing white space
                # trimmed by an editor): only a line that says something moves.
                was = _indent(base[start + k])
                if plain_base[start + k] and indent != was:
                    self.indents[start + k] = indent
                    if (
                        not blocks_by_indent
                        or indent.startswith(was)
                        or _place(base, start + k) == _place(side, side_start + k)
                    ):
                        self.in_place.add(start + k)
            i, j = start + size, side_start + size

    def rewrites(self, hunk: _Hunk) -> bool:
        """Whether `hunk` of the other side only rewrites lines this side re-indented.

        The one way an indentation change and an edit meet safely: a block re-indented
        on one side (wrapped in a `try`, say) with a line inside it edited in place on
        the other; the line takes the one side's indentation and the other's words. A
        line moved out of its block is not that: an edit made inside the loop (using
        the loop's variable) would run once, after it. A block re-indented with its
        surroundings (by a formatter, or tabs for spaces) is.
        """
        start, stop, lines = hunk
        if stop - start != len(lines) or not lines:
            return False
        for i, line in enumerate(lines, start):
            if i not in self.indents:
                return False
            indent = _indent(line)
            if indent == self.indents[i]:
                continue  # both sides moved it alike
            if i not in self.in_place or indent != _indent(self.base[i]):
                return False
        return True


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


def _near(lines: set[int]) -> set[int]:
    return {n for i in lines for n in (i - 1, i, i + 1)}


def _layout_meets_edit(indented: _Edits, edited: _Edits) -> bool:
    """Whether one side's re-indenting meets the other side's edits or re-indenting.

    Indentation is syntax in Python and in YAML: a line inserted, deleted or
    re-indented beside a line the other side moved into or out of a block lands at
    an indentation neither side wrote for it (an `IndentationError`, or a statement
    that silently left its loop). Only an in-place edit of lines the one side
    re-indented combines (`_Edits.rewrites`).
    """
    # A line both sides re-indented alike (a block both dedented) moved for both: the
    # other side's edits beside it were made at its new indentation.
    near = _near({i for i, indent in indented.indents.items() if edited.indents.get(i) != indent})
    for hunk in edited.hunks:
        if not indented.rewrites(hunk) and _touched([hunk]) & near:
            return True
    for i, indent in edited.indents.items():
        if i in indented.indents:
            if indented.indents[i] != indent:
                return True
        elif i in near:
            return True
    return False


def _form(indent: bytes, said: bytes) -> bytes:
    """A line as `_expected` compares it: indentation and what it says; blank is blank."""
    return indent + said if said else b""


def _expected(base: list[bytes], ours: _Edits, theirs: _Edits) -> list[bytes]:
    """The region as the sides' line edits say it must read, indentation included.

    Lines are given as indentation plus what they say (trailing white space left
    out): base lines where neither side edited them, re-indented as a side did; each
    side's edited lines as that side wrote them, except that a line edited in place
    inside a block the other side re-indented takes that side's indentation.
    """
    edits = [(hunk, theirs) for hunk in ours.hunks] + [(hunk, ours) for hunk in theirs.hunks]
    out: list[bytes] = []
    at = 0

    def unedited(stop: int) -> None:
        for i in range(at, stop):
            indent = ours.indents.get(i, theirs.indents.get(i, _indent(base[i])))
            out.append(_form(indent, _said(base[i])))

    for hunk, other in sorted(edits, key=lambda edit: edit[0][:2]):
        start, stop, lines = hunk
        unedited(start)
        for k, line in enumerate(lines):
            indent = _indent(line)
            if other.rewrites(hunk) and indent == _indent(base[start + k]):
                indent = other.indents[start + k]
            out.append(_form(indent, _said(line)))
        at = stop
    unedited(len(base))
    return out


def merge_words(
    base: list[bytes], ours: list[bytes], theirs: list[bytes], *, blocks_by_indent: bool = True
) -> list[bytes] | None:
    """The lines of a clean word-level merge of one clashing region, or None.

    None when both sides changed one line or one put a line next to a line the other
    changed, when an indentation change meets the other side's edit, when the words
    clash, when a change is made twice, or when the region is too large to be one
    statement's edits. `blocks_by_indent` (Python) keeps an edit off a line the other
    side moved out of its block; elsewhere indentation is only layout.
    """
    plain_base = [_said(line) for line in base]
    ours_edits = _Edits(base, plain_base, ours, blocks_by_indent)
    theirs_edits = _Edits(base, plain_base, theirs, blocks_by_indent)
    if _touched(ours_edits.hunks) & _touched(theirs_edits.hunks):
        # Both sides rewrote one line: the words of two edits of one statement, one
        # string or one comment do not combine into anything either side meant (a
        # version "1.14.dev" against "1.13.0" is not "1.14.0"; a fix appended to a
        # condition the other side rewrote runs both fixes).
        return None
    if _layout_meets_edit(ours_edits, theirs_edits) or _layout_meets_edit(theirs_edits, ours_edits):
        return None
    b, o, t = _tokens(base), _tokens(ours), _tokens(theirs)
    if len(b) + len(o) + len(t) > _MAX_TOKENS:
        return None
    settled: list[bytes] = []
    for chunk in merge3(b, o, t):
        if isinstance(chunk, Clash):
            return None
        settled.extend(chunk.lines)
    if _doubled(settled, o, t) or _made_twice(b, o, t):
        return None
    merged = split_lines(b"".join(settled))
    # The words must say what the lines say: each side's lines where that side
    # changed them, at the indentation the sides gave them. Two alike lines can pull
    # a word alignment across lines.
    if [_form(_indent(line), _said(line)) for line in merged] != _expected(
        base, ours_edits, theirs_edits
    ):
        return None
    return merged
