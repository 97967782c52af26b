"""A second, finer look at a clash: the same three-way merge over words.

A line merge calls two edits of one line a clash even when they touch different
words of it (one side renames the call, the other changes an argument), and two edits
of neighbouring lines a clash because no unchanged line lies between them. Splitting
the disputed lines into words, runs of white space and single punctuation marks and
merging those settles both, the way structured merge tools settle edits in different
leaves of one statement. What both sides changed in the same words stays a clash.

Only the entity merge asks for this: its result is parsed again and checked for
doubled declarations, imports and lines before it counts as clean, and a word merge
that breaks the syntax is caught there.
"""

from __future__ import annotations

import re
from collections import Counter

from .line_merge import Clash, merge3, split_lines

__all__ = ["merge_words"]

# A word is a run of ASCII word characters or of non-ASCII bytes (so a UTF-8
# character is never split between two sides' edits); white space runs, newlines and
# indentation included, are tokens of their own, so re-indenting a block and editing
# a word inside it are separate edits.
_TOKEN = re.compile(rb"\s+|[\w\x80-\xff]+|[^\w\s\x80-\xff]")
_WORD = re.compile(rb"[\w\x80-\xff]")

# Beyond this many tokens a clash is a rewrite, not two edits of a statement; the
# word merge would only weave two rewrites together, and Myers' cost grows with it.
_MAX_TOKENS = 4000


def _tokens(lines: list[bytes]) -> list[bytes]:
    return _TOKEN.findall(b"".join(lines))


def _doubled(merged: list[bytes], ours: list[bytes], theirs: list[bytes]) -> bool:
    """Whether a word occurs in `merged` more often than on either side.

    Then both sides added it, each in its own place, and the merge keeps both: an
    argument passed twice, a call made twice. Two sides may also have added one name
    for different reasons; refusing those costs a conflict, never a wrong merge.
    """
    counts = Counter(token for token in merged if _WORD.match(token))
    if not counts:
        return False
    o, t = Counter(ours), Counter(theirs)
    return any(n > max(o[word], t[word]) for word, n in counts.items())


def merge_words(base: list[bytes], ours: list[bytes], theirs: list[bytes]) -> list[bytes] | None:
    """The lines of a clean word-level merge of one clashing region, or None.

    None when the words clash too, when the region is too large to be one statement's
    edits, or when a word would appear in the merge more often than on either side.
    """
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
    return split_lines(b"".join(settled))
