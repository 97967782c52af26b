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
from collections.abc import Iterator

from .line_merge import Clash, matching_blocks, merge3, split_lines

__all__ = ["combined_lines", "merge_words", "said_alike"]

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
# other punctuation: two sides each adding an argument add a comma each; nor a
# version (`1.3.0`, three dotted parts or more): two packages bumped each to a new
# minor version are two changes. A decimal (`1.5`) counts as one number.
_COUNTED = re.compile(rb"[\w\x80-\xff]+|[-!~]")
# Literals are left out: two settings each turned on are two changes.
_LITERALS = frozenset(
    {b"true", b"false", b"True", b"False", b"null", b"None", b"nil", b"undefined"}
)


def _counted(tokens: list[bytes]) -> Counter[bytes]:
    counts: Counter[bytes] = Counter()
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token[:1].isdigit():
            # A number with its dotted parts: `1.5` is one number, `4.0.3` a version.
            end = i + 1
            while end + 1 < len(tokens) and tokens[end] == b"." and tokens[end + 1][:1].isdigit():
                end += 2
            if (end - i) // 2 + 1 < 3:
                counts[b"".join(tokens[i:end])] += 1
            i = end
            continue
        if _COUNTED.fullmatch(token) and token not in _LITERALS:
            counts[token] += 1
        i += 1
    return counts


def _doubled(merged: list[bytes], ours: list[bytes], theirs: list[bytes]) -> bool:
    """Whether a name, number or sign occurs in `merged` more often than on either side.

    Then both sides brought it in, each at its own place: one change made twice (a
    `.to_dict()` one side added where a value is read and the other where it is
    made, now called twice). Two sides may also have used one name for different
    reasons; refusing those costs a conflict, never a wrong merge.
    """
    o, t = _counted(ours), _counted(theirs)
    return any(n > max(o[token], t[token]) for token, n in _counted(merged).items())


# A side's edit of a run of words: (base position, words taken out, words put in),
# white space left out.
_WordEdit = tuple[int, tuple[bytes, ...], tuple[bytes, ...]]
# A separator or a bracket alone: two sides each adding a trailing comma are two
# edits, and a `)` one side dropped (unwrapping a call) is no part of the other side's
# deleted lines that happen to hold one.
_SEPARATORS = frozenset((mark,) for mark in (b",", b";", b"(", b")", b"[", b"]", b"{", b"}"))


def _word_edits(base: list[bytes], side: list[bytes]) -> list[_WordEdit]:
    edits: list[_WordEdit] = []
    i = j = 0
    for start, side_start, size in matching_blocks(base, side):
        if start > i or side_start > j:
            taken = tuple(token for token in base[i:start] if not token.isspace())
            put = tuple(token for token in side[j:side_start] if not token.isspace())
            edits.append((i, taken, put))
        i, j = start + size, side_start + size
    return edits


def _within(run: tuple[bytes, ...], words: tuple[bytes, ...]) -> bool:
    return any(words[k : k + len(run)] == run for k in range(len(words) - len(run) + 1))


def _made_twice(base: list[bytes], ours: list[bytes], theirs: list[bytes]) -> bool:
    """Whether one side's pure insertion (or deletion) is part of what the other side
    inserted (or deleted) at another place.

    That is one change made twice: `size` turned into `size()` where it is read on
    one side and into `size() + 1` where it is used on the other calls the result; a
    `?`, a `*`, a `&` added at both ends applies twice; a sign each side dropped (or
    replaced) at its own place undoes both fixes. The same edit at the same place is
    one edit, merged once.
    """
    ours_edits, theirs_edits = _word_edits(base, ours), _word_edits(base, theirs)
    for one, other in ((ours_edits, theirs_edits), (theirs_edits, ours_edits)):
        for at, taken, put in one:
            for other_at, other_taken, other_put in other:
                if at == other_at:
                    continue
                if put and not taken and put not in _SEPARATORS and _within(put, other_put):
                    return True
                if taken and not put and taken not in _SEPARATORS and _within(taken, other_taken):
                    return True
    return False


def _indent(line: bytes) -> bytes:
    return line[: len(line) - len(line.lstrip(b" \t"))]


# What keeps its spacing inside a line: a double-quoted or backquoted string, and a
# comment to the end of the line.
_KEPT = rb'"(?:\\.|[^"\\])*"|`[^`]*`|//.*|#.*'
_KEPT_OR_SPACE = re.compile(rb"(" + _KEPT + rb")|\s+")
_KEPT_ONLY = re.compile(_KEPT)
# Left outside those, a mark that may open text whose spacing counts and that a line
# alone cannot place: a single quote (a string, a Rust lifetime, a Go rune), a slash
# (a regular expression), or a quote left open (a string that spans lines).
_UNPLACED = re.compile(rb"[\'/\"`]")


def _said(line: bytes) -> bytes:
    """What a line says: without the white space around it and, where that is safe,
    with runs of it between words made one space.

    A formatter re-aligning a Go struct or a column of assignments changes no line's
    meaning; a side that changed `"%d  items"` to `"%d items"` changed its line. A
    line with a mark that may open a string it cannot place keeps all its spacing.
    """
    text = line.strip()
    if _UNPLACED.search(_KEPT_ONLY.sub(b"", text)):
        return text
    return _KEPT_OR_SPACE.sub(lambda m: m.group(1) or b" ", text)


# A side's edit of a region: base lines [start, stop) replaced by these lines.
_Hunk = tuple[int, int, list[bytes]]


def _width(line: bytes) -> int:
    return len(_indent(line).expandtabs(8))


def _above(lines: list[bytes], at: int) -> int:
    """How the line at `at` is indented against the nearest line above that says
    something: -1 less, 0 alike, 1 more (0 at the top).

    Kept by a re-indent, the line is still where it was in the blocks: moved with the
    lines above it (a wrapped block's body and last line, a formatter's re-indent),
    not into a loop above it or out of the block it ended.
    """
    i = at - 1
    while i >= 0 and not lines[i].strip():
        i -= 1
    if i < 0:
        return 0
    here, there = _width(lines[at]), _width(lines[i])
    return (here > there) - (here < there)


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
        # The re-indented lines still in the block they were in (`_above`), or any
        # re-indented line where indentation is only layout.
        self.in_place: set[int] = set()
        # Each base line this side did not edit, as this side wrote it (its spacing).
        self.kept: dict[int, bytes] = {}
        i = j = 0
        for start, side_start, size in matching_blocks(plain_base, plain_side):
            if start > i or side_start > j:
                self.hunks.append((i, start, side[j:side_start]))
            for k in range(size):
                self.kept[start + k] = side[side_start + k]
                indent = _indent(side[side_start + k])
                # A blank line's indentation means nothing (trailing white space
                # trimmed by an editor): only a line that says something moves.
                was = _indent(base[start + k])
                if plain_base[start + k] and indent != was:
                    self.indents[start + k] = indent
                    if not blocks_by_indent or _above(base, start + k) == _above(
                        side, side_start + k
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


def _laid_out(
    base: list[bytes], ours: _Edits, theirs: _Edits
) -> Iterator[tuple[int, _Hunk | None, _Edits | None]]:
    """The region's lines in the order the sides' line edits lay them out: ``(i, None,
    None)`` for base line ``i`` that neither side edited, ``(k, hunk, other)`` for line
    ``k`` of one side's ``hunk``, ``other`` being the other side's edits."""
    edits = [(hunk, theirs) for hunk in ours.hunks] + [(hunk, ours) for hunk in theirs.hunks]
    at = 0
    for hunk, other in sorted(edits, key=lambda edit: edit[0][:2]):
        start, stop, lines = hunk
        yield from ((i, None, None) for i in range(at, start))
        yield from ((k, hunk, other) for k in range(len(lines)))
        at = stop
    yield from ((i, None, None) for i in range(at, len(base)))


def _expected(base: list[bytes], ours: _Edits, theirs: _Edits) -> list[bytes]:
    """The region as the sides' line edits say it must read, indentation included.

    Lines are given as indentation plus what they say (trailing white space left
    out): base lines where neither side edited them, re-indented as a side did; each
    side's edited lines as that side wrote them, except that a line edited in place
    inside a block the other side re-indented takes that side's indentation.
    """
    out: list[bytes] = []
    for k, hunk, other in _laid_out(base, ours, theirs):
        if hunk is None or other is None:
            indent = ours.indents.get(k, theirs.indents.get(k, _indent(base[k])))
            out.append(_form(indent, _said(base[k])))
            continue
        start, _, lines = hunk
        indent = _indent(lines[k])
        if other.rewrites(hunk) and indent == _indent(base[start + k]):
            indent = other.indents[start + k]
        out.append(_form(indent, _said(lines[k])))
    return out


def _respaced(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """A line whose words neither side changed, as the sides' spacing changes make it:
    the side's line that changed it, or, where both did, the one side's line that already
    holds the other's change (both dropped a trailing space, one also re-indented). None
    where the two would have to be combined: in a string, two rewrites of one line."""
    if ours == base:
        return theirs
    if theirs in (base, ours):
        return ours
    merged: list[bytes] = []
    for chunk in merge3(_tokens([base]), _tokens([ours]), _tokens([theirs])):
        if isinstance(chunk, Clash):
            return None
        merged.extend(chunk.lines)
    line = b"".join(merged)
    return line if line in (ours, theirs) else None


def _written(base: list[bytes], ours: _Edits, theirs: _Edits) -> list[bytes | None]:
    """For each line of the region as `_laid_out` lays it out, the line as one side wrote
    it there: the edited line of the side that edited it; for a line whose words neither
    side edited, the line as both sides' spacing changes make it (`_respaced`)."""
    out: list[bytes | None] = []
    for k, hunk, _ in _laid_out(base, ours, theirs):
        if hunk is not None:
            out.append(hunk[2][k])
            continue
        mine, yours = ours.kept.get(k), theirs.kept.get(k)
        out.append(None if mine is None or yours is None else _respaced(base[k], mine, yours))
    return out


def combined_lines(
    base: list[bytes],
    ours: list[bytes],
    theirs: list[bytes],
    merged: list[bytes],
    *,
    blocks_by_indent: bool = True,
) -> list[bytes]:
    """The lines of `merge_words`' result that neither side wrote at their place: one
    side's words with the other side's spacing or indentation. By place (`_written`), not
    by lookup: a combined line can equal a line a side wrote elsewhere in the region."""
    plain_base = [_said(line) for line in base]
    sources = _written(
        base,
        _Edits(base, plain_base, ours, blocks_by_indent),
        _Edits(base, plain_base, theirs, blocks_by_indent),
    )
    if len(sources) != len(merged):
        return list(merged)  # not laid out as the edits say: every line is suspect
    return [line for line, written in zip(merged, sources, strict=True) if line != written]


def said_alike(ours: list[bytes], theirs: list[bytes]) -> bool:
    """True when two sides' versions of a region say the same, line by line.

    Same indentation, and the same words once spacing that is only layout is set
    aside (`_said`): a field both sides added to one Go struct, aligned to different
    neighbours, or one statement both wrote with an extra space. Either side's text
    is then the merge; spacing inside strings and comments still counts.
    """
    return len(ours) == len(theirs) and all(
        _indent(o) == _indent(t) and _said(o) == _said(t) for o, t in zip(ours, theirs, strict=True)
    )


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
