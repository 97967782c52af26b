"""One side converting a file's line endings, merged as a conversion, not as line edits.

A side that turns every CRLF of a file into LF (or back) changes every line. Merged line
by line against an edit of the other side, the lines the other side touched keep its
ending and the rest take the converter's, and the file ends up with both, which neither
side wrote. So when the three versions each use one ending and a side's differs from
the base's, the merge is made with every version in LF and written in that side's
ending. A file that already mixes endings is merged as it is.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["Ending", "converted_to", "in_lf", "written_in"]

Ending = Literal["crlf", "lf"]


def _ending(data: bytes) -> Ending | Literal["mixed"] | None:
    crlf = data.count(b"\r\n")
    lf = data.count(b"\n") - crlf
    if crlf and lf:
        return "mixed"
    return "crlf" if crlf else "lf" if lf else None


def converted_to(base: bytes, ours: bytes, theirs: bytes) -> Ending | None:
    """The ending a side converted the file to, or None when no side did (or one mixes)."""
    endings = [_ending(data) for data in (base, ours, theirs)]
    was = endings[0]
    if was is None or "mixed" in endings:
        return None
    changed: set[Ending] = {e for e in endings[1:] if (e == "crlf" or e == "lf") and e != was}
    return changed.pop() if len(changed) == 1 else None


def in_lf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n")


def written_in(ending: Ending, data: bytes) -> bytes:
    """`data` (in LF) with every line ending in `ending`."""
    return data.replace(b"\n", b"\r\n") if ending == "crlf" else data
