"""Lines a merge keeps more often than the two sides' changes allow.

A line merge takes each side's insertion where that side put it. When both sides
inserted the same line — the same call, the same assignment — at different places of
one entity, both insertions survive and the line runs twice, although each side meant
it once. Inside one entity (a function body, a class's header) that is almost always
one change made twice, so the merge reports it instead of keeping both.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from .line_merge import split_lines

__all__ = ["LineCounts", "doubled_lines", "normalised", "repeated_lines", "revived_lines"]

# Lines that recur by nature; a block's closing and a bare keyword say nothing.
_TRIVIAL = frozenset(
    {b"else:", b"try:", b"finally:", b"pass", b"return", b"break", b"continue", b"default:"}
)
_ASCII_ALNUM = re.compile(rb"[A-Za-z0-9]")


_COMMENT = (b"#", b"//", b"/*", b"*")


def _significant(line: bytes, comments: bool = False) -> bool:
    text = line.strip()
    if text.startswith(_COMMENT):
        if not comments:
            return False
        # A comment line is judged by its words: commented-out code or prose is as
        # telling as code, a rule of stars or slashes is nothing.
        text = text.lstrip(b"#/* \t")
    if len(text) < 4 or text in _TRIVIAL:
        return False
    # An ASCII letter or digit decides it without decoding; only a line of other
    # characters needs the Unicode test.
    return _ASCII_ALNUM.search(text) is not None or (
        not text.isascii() and any(c.isalnum() for c in text.decode("utf-8", "replace"))
    )


def _norm(line: bytes) -> bytes:
    # Runs of spaces collapsed: a formatter re-aligning a struct literal is no new line.
    return b" ".join(line.split())


def normalised(text: bytes) -> frozenset[bytes]:
    """The lines of `text` as `revived_lines` compares them."""
    return frozenset(map(_norm, split_lines(text)))


def _candidates(
    raw: Iterable[bytes], skip: frozenset[bytes] = frozenset(), *, comments: bool = False
) -> set[bytes]:
    """The significant normalised forms of `raw` lines, less `skip`."""
    return {n for line in raw if _significant(line, comments) and (n := _norm(line)) not in skip}


class LineCounts:
    """The lines of base, ours, theirs and a merge, counted once for the checks below.

    The versions share most of their lines, so each distinct line is normalised once,
    and only when a check has candidates to count: that costs about a quarter of
    normalising every line of each version (these checks run on every clean merge and
    on every entity merged by lines). One clean merge's checks share one instance.
    """

    def __init__(self, base: bytes, ours: bytes, theirs: bytes, merged: bytes) -> None:
        self.raw = [Counter(split_lines(text)) for text in (base, ours, theirs, merged)]
        self._norm: dict[bytes, bytes] | None = None

    @property
    def norm(self) -> dict[bytes, bytes]:
        """Each distinct line of the four versions, normalised."""
        if self._norm is None:
            self._norm = {line: _norm(line) for line in set().union(*self.raw)}
        return self._norm

    def counts(
        self, only: set[bytes], *, significant: bool = True, comments: bool = False
    ) -> list[Counter[bytes]]:
        """How often each line of `only` occurs in each version, normalised; with
        `significant`, counting only the raw lines `_significant` accepts (comment lines
        too with `comments`).

        The checks below can only report lines of a small candidate set found with
        set operations on the raw lines, so the costly significance test runs on the
        raw lines that normalise into it alone.
        """
        hits = {
            line: n
            for line, n in self.norm.items()
            if n in only and (not significant or _significant(line, comments))
        }
        found: list[Counter[bytes]] = []
        for raw in self.raw:
            counted: Counter[bytes] = Counter()
            for line, n in hits.items():
                if line in raw:
                    counted[n] += raw[line]
            found.append(counted)
        return found

    def normalised_counts(self, which: int) -> Counter[bytes]:
        """Version `which`'s lines (0 base … 3 the merge), normalised, with how often each
        occurs."""
        counted: Counter[bytes] = Counter()
        for line, k in self.raw[which].items():
            counted[self.norm[line]] += k
        return counted


def doubled_lines(base: bytes, ours: bytes, theirs: bytes, merged: bytes) -> list[bytes]:
    """New lines both sides added alike that `merged` holds more often than either side.

    Alike: as often on each side, and new to the entity. A line the entity already had,
    or one side added more often than the other, is most likely two independent
    additions (one more test case each), which both belong in the merge.
    """
    merged_lines = split_lines(merged)
    # A line the base holds (as it is) normalises to a line the base holds: not new.
    only = _candidates(set(merged_lines).difference(split_lines(base)))
    if not only:
        return []
    b, o, t, m = LineCounts(base, ours, theirs, merged).counts(only)
    return sorted(
        line for line, n in m.items() if b[line] == 0 and o[line] == t[line] > 0 and n > o[line]
    )


def revived_lines(lines: LineCounts, *, skip: frozenset[bytes] = frozenset()) -> list[bytes]:
    """Lines one side deleted, the other kept as often as the base had them, yet merged.

    One side moving a member (to another class, another block) while the other
    deletes it leaves the entity merge two unrelated facts — an addition here, a
    deletion there — and the moved copy survives the deletion. Counted over the
    whole file, the line is still there although no side added one. Lines in `skip`
    (the merged file's import statements, which the imports check judges) are not counted.
    Comment lines are: a commented-out line one side turned into code and the other
    moved with a neighbour would otherwise survive beside the code (actix-web's
    header/mod.rs, fifth held-out set).
    """
    # A line that one side lacks altogether is a raw line of `merged` missing from
    # that side: only those can be reported.
    both = lines.raw[1].keys() & lines.raw[2].keys()
    only = _candidates(lines.raw[3].keys() - both, skip, comments=True)
    if not only:
        return []
    b, o, t, m = lines.counts(only, comments=True)
    # Only lines the base had once (a member's header, a field): a common line's count
    # hides one side deleting a copy here while adding one there.
    return sorted(
        line for line, n in m.items() if b[line] == 1 and n and sorted((o[line], t[line])) == [0, 1]
    )


def repeated_lines(lines: LineCounts) -> list[bytes]:
    """Lines base and both sides each hold exactly once that `merged` holds more often.

    No side added a copy, so a second one is a line that travelled with two entities:
    a comment one side left above a deleted item and the other kept in the file's head.
    Comments count here (unlike the checks above): such a line is often one.
    """
    twice = {line for line, n in lines.normalised_counts(3).items() if n > 1 and line}
    if not twice:
        return []
    b, o, t, _ = lines.counts(twice, significant=False)
    return sorted(line for line in twice if b[line] == 1 and o[line] == 1 and t[line] == 1)
