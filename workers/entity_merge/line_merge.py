"""A diff3-style three-way merge over lines, in pure Python.

This is the fallback for files no grammar covers and the tool the entity merge uses
inside one entity. It follows the classic sync-region formulation (as in GNU diff3
and bzr's merge3): lines that base, ours and theirs all agree on split the files
into stable runs and changed regions; a changed region is taken from whichever side
changed it, and is a conflict only when both sides changed it differently.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import compress, count, islice
from operator import ne, not_

__all__ = [
    "Clash",
    "LineMerge",
    "Stable",
    "matching_blocks",
    "merge3",
    "merge_lines",
    "render",
    "shared_run",
    "split_lines",
]


@dataclass(frozen=True, slots=True)
class Stable:
    """A run of lines the merge settled without a conflict."""

    lines: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class Clash:
    """A region both sides changed differently; `base` is kept for the evidence."""

    base: tuple[bytes, ...]
    ours: tuple[bytes, ...]
    theirs: tuple[bytes, ...]


Chunk = Stable | Clash


@dataclass(frozen=True, slots=True)
class LineMerge:
    """The rendered outcome of a line merge and the clashes it had to mark."""

    content: bytes
    clashes: tuple[Clash, ...]

    @property
    def clean(self) -> bool:
        """True when no region needed conflict markers."""
        return not self.clashes


def split_lines(data: bytes) -> list[bytes]:
    """Split after every newline, keeping it, so joining the parts gives `data` back.

    Only ``\\n`` ends a line: tree-sitter counts rows the same way, and a lone
    ``\\r`` inside a line must not shift the row numbers the entity extractor uses.
    """
    if not data:
        return []
    if b"\r" not in data:
        # bytes.splitlines only also splits at "\r", so without one it is the same
        # split, done in C.
        return data.splitlines(keepends=True)
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


# Beyond this many inserted plus deleted lines, Myers' quadratic worst case costs more
# than it is worth in pure Python (about 0.3 s at this bound), and the merge falls back
# to difflib's faster, approximate matcher.
_MAX_EDIT = 1000


def _myers(a: list[int], b: list[int]) -> list[tuple[int, int, int]] | None:
    """Matching blocks of a shortest edit script (Myers 1986), or None past `_MAX_EDIT`.

    git's merge diffs with Myers too. Where a diff is ambiguous (a block copied next
    to itself, say) the greedy forward walk keeps the earliest lines matched and
    calls the later copy the insertion, as git does; difflib anchors on the longest
    common run instead, which can pull an insertion into the other side's edit and
    report a conflict git would not.
    """
    n, m = len(a), len(b)
    previous: dict[int, int] = {1: 0}
    steps: list[dict[int, int]] = []
    for d in range(min(n + m, _MAX_EDIT) + 1):
        # Only diagonals that stay inside the edit graph, with the parity of d.
        low = -d if d <= m else -m + (d - m) % 2
        high = d if d <= n else n - (d - n) % 2
        current: dict[int, int] = {}
        get = previous.get
        for k in range(low, high + 1, 2):
            # `_down` inlined: this loop is the hottest in the driver.
            up, left = get(k + 1), get(k - 1)
            x = up if up is not None and (left is None or left < up) else left + 1  # type: ignore[operator]
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x += 1
                y += 1
            current[k] = x
            if x >= n and y >= m:
                steps.append(current)
                return _backtrack(steps, n, m)
        steps.append(current)
        previous = current
    return None


def _down(previous: dict[int, int], k: int) -> bool:
    """Whether diagonal k is best reached from k+1 (an insertion) rather than k-1."""
    return k + 1 in previous and (k - 1 not in previous or previous[k - 1] < previous[k + 1])


def _backtrack(steps: list[dict[int, int]], n: int, m: int) -> list[tuple[int, int, int]]:
    blocks: list[tuple[int, int, int]] = []
    x, y = n, m
    for d in range(len(steps) - 1, 0, -1):
        previous = steps[d - 1]
        k = x - y
        down = _down(previous, k)
        prev_k = k + 1 if down else k - 1
        prev_x = previous[prev_k]
        start_x = prev_x if down else prev_x + 1
        if x > start_x:
            blocks.append((start_x, start_x - k, x - start_x))
        x, y = prev_x, prev_x - prev_k
    if x > 0:
        blocks.append((0, 0, x))
    blocks.reverse()
    return blocks


def _myers_matchable(a: list[int], b: list[int]) -> list[tuple[int, int, int]] | None:
    """`_myers` on the lines that occur in both sequences, mapped back.

    A line the other side lacks can only be inserted or deleted, so leaving it out
    changes no longest common subsequence and shrinks the edit distance Myers' time
    grows with (git's xdiff discards such lines the same way).
    """
    in_a, in_b = set(a), set(b)
    keep_a = [i for i, v in enumerate(a) if v in in_b]
    keep_b = [j for j, v in enumerate(b) if v in in_a]
    if len(keep_a) == len(a) and len(keep_b) == len(b):
        return _myers(a, b)
    found = _myers([a[i] for i in keep_a], [b[j] for j in keep_b])
    if found is None:
        return None
    blocks: list[tuple[int, int, int]] = []
    for x, y, size in found:
        # A run of the kept lines is a run of the originals only where no discarded
        # line sat between two of its lines.
        start = 0
        for t in range(1, size + 1):
            if (
                t == size
                or keep_a[x + t] != keep_a[x + t - 1] + 1
                or keep_b[y + t] != keep_b[y + t - 1] + 1
            ):
                blocks.append((keep_a[x + start], keep_b[y + start], t - start))
                start = t
    return blocks


def shared_run(a: list[bytes], b: list[bytes], most: int, *, from_end: bool = False) -> int:
    """How many first (or last) lines `a` and `b` share, at most `most`.

    The lines are compared pairwise in C up to the first that differs: a Python loop
    over a long equal run (a whole file's unchanged top) cost more than the diff.
    """
    pairs = map(ne, reversed(a), reversed(b)) if from_end else map(ne, a, b)
    return next(compress(count(), islice(pairs, most)), most)


def matching_blocks(a: list[bytes], b: list[bytes]) -> list[tuple[int, int, int]]:
    """(a_start, b_start, length) runs of equal lines, ending with a (len a, len b, 0) sentinel."""
    prefix = shared_run(a, b, min(len(a), len(b)))
    suffix = shared_run(a, b, min(len(a), len(b)) - prefix, from_end=True)
    middle_a, middle_b = a[prefix : len(a) - suffix], b[prefix : len(b) - suffix]
    ids: dict[bytes, int] = {}
    found = _myers_matchable(
        [ids.setdefault(line, len(ids)) for line in middle_a],
        [ids.setdefault(line, len(ids)) for line in middle_b],
    )
    if found is None:
        # Files this different are rewrites; a quick approximate alignment is enough.
        # difflib's autojunk (ignoring very frequent lines as anchors) is what keeps
        # it fast on repetitive text, where its exact mode is quadratic or worse.
        matcher = difflib.SequenceMatcher(None, middle_a, middle_b)
        found = [(m.a, m.b, m.size) for m in matcher.get_matching_blocks() if m.size]
    blocks = [(0, 0, prefix)] if prefix else []
    blocks += [(i + prefix, j + prefix, size) for i, j, size in found]
    if suffix:
        blocks.append((len(a) - suffix, len(b) - suffix, suffix))
    return _slid(a, b, blocks)


def _slide_down(lines: list[bytes], changed: list[bool]) -> bool:
    """Move each run of changed lines as far down as an identical line allows.

    A run such as an inserted copy of the lines around it can sit in several places
    with the same meaning. git slides it to the last one; doing the same keeps two
    sides' changes apart where git keeps them apart, so both merges agree on what
    conflicts. Returns whether any run moved.

    Runs are found with `list.index`, which searches in C: most lines are unchanged,
    and stepping over them one by one in Python was most of this function's time.
    """
    moved = False
    n = len(lines)
    i = _next(changed, True, 0, n)
    while i < n:
        start = i
        end = _next(changed, False, i, n)
        while end < n and lines[start] == lines[end]:
            changed[start], changed[end] = False, True
            moved = True
            start, end = start + 1, end + 1
            end = _next(changed, False, end, n)
        i = _next(changed, True, end, n)
    return moved


def _next(flags: list[bool], value: bool, start: int, stop: int) -> int:
    """The first index from `start` on where `flags` holds `value`, or `stop`."""
    try:
        return flags.index(value, start, stop)
    except ValueError:
        return stop


def _slid(
    a: list[bytes], b: list[bytes], blocks: list[tuple[int, int, int]]
) -> list[tuple[int, int, int]]:
    """`blocks` with each run of changed lines slid down as far as it goes (see
    `_slide_down`), as maximal runs and a (len a, len b, 0) sentinel.

    `blocks` must be as a diff gives them: non-empty, in order and apart on both sides.
    """
    # Sliding a run over an equal line keeps the sequence of unchanged lines the same
    # on each side, so after sliding both sides independently their unchanged lines
    # still pair up one to one, in order.
    changed_a, changed_b = [True] * len(a), [True] * len(b)
    for i, j, size in blocks:
        changed_a[i : i + size] = [False] * size
        changed_b[j : j + size] = [False] * size
    moved_a = _slide_down(a, changed_a)
    moved_b = _slide_down(b, changed_b)
    if moved_a or moved_b:
        kept = zip(
            compress(count(), map(not_, changed_a)),
            compress(count(), map(not_, changed_b)),
            strict=True,
        )
        runs = _joined((i, j, 1) for i, j in kept)
    else:
        # Nothing slid: the runs are the blocks, joined where one ends at the next.
        runs = _joined(blocks)
    runs.append((len(a), len(b), 0))
    return runs


def _joined(blocks: Iterable[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """`blocks` (in order) with each one that starts where the last ends merged into it."""
    runs: list[tuple[int, int, int]] = []
    for i, j, size in blocks:
        if runs and runs[-1][0] + runs[-1][2] == i and runs[-1][1] + runs[-1][2] == j:
            runs[-1] = (runs[-1][0], runs[-1][1], runs[-1][2] + size)
        else:
            runs.append((i, j, size))
    return runs


def _sync_regions(
    base: list[bytes], ours: list[bytes], theirs: list[bytes]
) -> list[tuple[int, int, int, int, int, int]]:
    """Runs of base that both sides kept, as (base, base_end, ours, ours_end, theirs, ...)."""
    ours_blocks = matching_blocks(base, ours)
    theirs_blocks = matching_blocks(base, theirs)
    regions: list[tuple[int, int, int, int, int, int]] = []
    i = j = 0
    while i < len(ours_blocks) and j < len(theirs_blocks):
        o_base, o_start, o_len = ours_blocks[i]
        t_base, t_start, t_len = theirs_blocks[j]
        low = max(o_base, t_base)
        high = min(o_base + o_len, t_base + t_len)
        if low < high:
            o_sub = o_start + (low - o_base)
            t_sub = t_start + (low - t_base)
            length = high - low
            regions.append((low, high, o_sub, o_sub + length, t_sub, t_sub + length))
        if o_base + o_len < t_base + t_len:
            i += 1
        else:
            j += 1
    # A zero-length sentinel at the ends flushes the last changed region.
    regions.append((len(base), len(base), len(ours), len(ours), len(theirs), len(theirs)))
    return regions


def _trimmed_clash(base: list[bytes], ours: list[bytes], theirs: list[bytes]) -> list[Chunk]:
    # Lines both sides agree on at the edges of a clash are not in dispute; moving
    # them outside the markers keeps the conflict to the lines that really collide
    # (git's "zealous" merge level does the same).
    head = 0
    while head < min(len(ours), len(theirs)) and ours[head] == theirs[head]:
        head += 1
    tail = 0
    while (
        tail < min(len(ours), len(theirs)) - head
        and ours[len(ours) - 1 - tail] == theirs[len(theirs) - 1 - tail]
    ):
        tail += 1
    chunks: list[Chunk] = []
    if head:
        chunks.append(Stable(tuple(ours[:head])))
    chunks.append(
        Clash(
            base=tuple(base),
            ours=tuple(ours[head : len(ours) - tail]),
            theirs=tuple(theirs[head : len(theirs) - tail]),
        )
    )
    if tail:
        chunks.append(Stable(tuple(ours[len(ours) - tail :])))
    return chunks


# Settles a clashing region (base, ours, theirs) by other means, or returns None.
Refine = Callable[[list[bytes], list[bytes], list[bytes]], list[bytes] | None]


def merge3(
    base: list[bytes], ours: list[bytes], theirs: list[bytes], *, refine: Refine | None = None
) -> list[Chunk]:
    """Three-way merge of line lists into stable runs and clashes.

    `refine`, if given, gets each region both sides changed differently, whole, and
    may return the lines that settle it (the entity merge tries its words).
    """
    chunks: list[Chunk] = []
    z = o = t = 0
    for z_match, z_end, o_match, o_end, t_match, t_end in _sync_regions(base, ours, theirs):
        if o_match > o or t_match > t or z_match > z:
            base_part, ours_part, theirs_part = base[z:z_match], ours[o:o_match], theirs[t:t_match]
            if ours_part == theirs_part or theirs_part == base_part:
                chunks.append(Stable(tuple(ours_part)))
            elif ours_part == base_part:
                chunks.append(Stable(tuple(theirs_part)))
            elif (
                refine is not None
                and (settled := refine(base_part, ours_part, theirs_part)) is not None
            ):
                chunks.append(Stable(tuple(settled)))
            else:
                chunks.extend(_trimmed_clash(base_part, ours_part, theirs_part))
        if z_end > z_match:
            chunks.append(Stable(tuple(base[z_match:z_end])))
        z, o, t = z_end, o_end, t_end
    return chunks


def _terminated(lines: tuple[bytes, ...]) -> list[bytes]:
    # A side ending without a newline would glue its last line to the next marker.
    out = list(lines)
    if out and not out[-1].endswith(b"\n"):
        out[-1] += b"\n"
    return out


def render(
    chunks: list[Chunk],
    *,
    label: str = "",
    marker_size: int = 7,
) -> LineMerge:
    """Join chunks into file content, writing conflict markers around each clash.

    `label` (e.g. ``function total``) is appended to both markers so a reader of the
    conflicted file sees which entity collided without reading the hunk.
    """
    suffix = f" ({label})" if label else ""
    opening = ("<" * marker_size + " ours" + suffix + "\n").encode()
    middle = ("=" * marker_size + "\n").encode()
    closing = (">" * marker_size + " theirs" + suffix + "\n").encode()
    out: list[bytes] = []
    clashes: list[Clash] = []
    for chunk in chunks:
        if isinstance(chunk, Stable):
            out.extend(chunk.lines)
            continue
        clashes.append(chunk)
        if out and not out[-1].endswith(b"\n"):
            out[-1] += b"\n"
        out.append(opening)
        out.extend(_terminated(chunk.ours))
        out.append(middle)
        out.extend(_terminated(chunk.theirs))
        out.append(closing)
    return LineMerge(content=b"".join(out), clashes=tuple(clashes))


def merge_lines(
    base: bytes,
    ours: bytes,
    theirs: bytes,
    *,
    label: str = "",
    marker_size: int = 7,
) -> LineMerge:
    """Three-way line merge of whole texts; conflicts are marked, tagged with `label`."""
    if ours == theirs or theirs == base:
        return LineMerge(content=ours, clashes=())
    if ours == base:
        return LineMerge(content=theirs, clashes=())
    chunks = merge3(split_lines(base), split_lines(ours), split_lines(theirs))
    return render(chunks, label=label, marker_size=marker_size)
