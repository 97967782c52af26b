"""The pure-Python diff3 line merge used as fallback and inside entities."""

from __future__ import annotations

import difflib
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workers.entity_merge.line_merge import (
    _myers,
    _slid,
    matching_blocks,
    merge_lines,
    split_lines,
)

BASE = b"one\ntwo\nthree\nfour\nfive\nsix\nseven\n"


@pytest.mark.parametrize(
    ("data", "lines"),
    [
        pytest.param(b"", [], id="empty"),
        pytest.param(b"a\nb\n", [b"a\n", b"b\n"], id="terminated"),
        pytest.param(b"a\nb", [b"a\n", b"b"], id="unterminated-last-line"),
        pytest.param(b"a\r\nb\rc\n", [b"a\r\n", b"b\rc\n"], id="only-newline-splits"),
    ],
)
def test_split_lines_keeps_newlines_and_only_splits_on_them(
    data: bytes, lines: list[bytes]
) -> None:
    """Lines keep their endings, join back to the input, and a lone CR does not split."""
    assert split_lines(data) == lines
    assert b"".join(split_lines(data)) == data


@pytest.mark.parametrize(
    ("ours", "theirs", "expected"),
    [
        pytest.param(BASE, BASE, BASE, id="nobody-changed"),
        pytest.param(BASE.replace(b"two", b"TWO"), BASE, BASE.replace(b"two", b"TWO"), id="ours"),
        pytest.param(BASE, BASE.replace(b"two", b"TWO"), BASE.replace(b"two", b"TWO"), id="theirs"),
        pytest.param(
            BASE.replace(b"two", b"TWO"),
            BASE.replace(b"six", b"SIX"),
            BASE.replace(b"two", b"TWO").replace(b"six", b"SIX"),
            id="apart",
        ),
        pytest.param(
            BASE.replace(b"four\n", b""),
            BASE.replace(b"four\n", b""),
            BASE.replace(b"four\n", b""),
            id="same-deletion",
        ),
        pytest.param(
            BASE + b"eight\n",
            b"zero\n" + BASE,
            b"zero\n" + BASE + b"eight\n",
            id="both-ends",
        ),
    ],
)
def test_changes_that_do_not_overlap_merge_cleanly(
    ours: bytes, theirs: bytes, expected: bytes
) -> None:
    """Non-overlapping or identical changes from both sides are all applied."""
    result = merge_lines(BASE, ours, theirs)
    assert result.clean
    assert result.content == expected


def test_overlapping_changes_conflict_with_labelled_markers() -> None:
    """Both sides changing one line produce markers carrying the label, and the clash."""
    result = merge_lines(
        BASE, BASE.replace(b"four", b"4"), BASE.replace(b"four", b"IV"), label="function f"
    )
    assert not result.clean
    assert result.content == (
        b"one\ntwo\nthree\n<<<<<<< ours (function f)\n4\n=======\nIV\n"
        b">>>>>>> theirs (function f)\nfive\nsix\nseven\n"
    )
    [clash] = result.clashes
    assert (clash.base, clash.ours, clash.theirs) == ((b"four\n",), (b"4\n",), (b"IV\n",))


def test_lines_both_sides_agree_on_stay_outside_the_markers() -> None:
    """A clash is trimmed to the lines that differ between ours and theirs."""
    ours = BASE.replace(b"four\n", b"new\n4\nend\n")
    theirs = BASE.replace(b"four\n", b"new\nIV\nend\n")
    result = merge_lines(BASE, ours, theirs, marker_size=3)
    assert b"new\n<<< ours\n4\n===\nIV\n>>> theirs\nend\n" in result.content


def test_a_side_without_a_final_newline_does_not_glue_to_a_marker() -> None:
    """A conflicting last line lacking its newline still leaves the markers on their own lines."""
    result = merge_lines(b"a\nb", b"a\nB", b"a\nC")
    assert result.content == b"a\n<<<<<<< ours\nB\n=======\nC\n>>>>>>> theirs\n"


def _git_merge_file(tmp_path: Path, base: bytes, ours: bytes, theirs: bytes) -> tuple[bytes, int]:
    for name, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        (tmp_path / name).write_bytes(data)
    done = subprocess.run(
        ["git", "merge-file", "-p", "ours", "base", "theirs"],
        cwd=tmp_path,
        capture_output=True,
        check=False,
    )
    return done.stdout, done.returncode


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        pytest.param(BASE.replace(b"two", b"2"), BASE.replace(b"six", b"6"), id="apart"),
        pytest.param(BASE.replace(b"two", b"2"), BASE.replace(b"two", b"II"), id="same-line"),
        pytest.param(BASE + b"x\n", BASE + b"y\n", id="both-append"),
        pytest.param(BASE.replace(b"three\n", b""), BASE.replace(b"four", b"4"), id="adjacent"),
    ],
)
def test_agrees_with_git_merge_file_on_clean_or_conflicted(
    tmp_path: Path, ours: bytes, theirs: bytes
) -> None:
    """Where git merge-file is clean we are clean with the same text, and vice versa."""
    git_content, git_status = _git_merge_file(tmp_path, BASE, ours, theirs)
    result = merge_lines(BASE, ours, theirs)
    assert result.clean == (git_status == 0)
    if result.clean:
        assert result.content == git_content


def _lcs_length(a: list[int], b: list[int]) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        previous = 0
        for j, y in enumerate(b):
            current = row[j + 1]
            row[j + 1] = previous + 1 if x == y else max(row[j + 1], row[j])
            previous = current
    return row[-1]


def _assert_valid(blocks: list[tuple[int, int, int]], a: list[Any], b: list[Any]) -> int:
    next_a = next_b = matched = 0
    for i, j, size in blocks:
        assert i >= next_a and j >= next_b
        assert a[i : i + size] == b[j : j + size]
        next_a, next_b, matched = i + size, j + size, matched + size
    return matched


@settings(max_examples=300, deadline=None)
@given(
    a=st.lists(st.integers(min_value=0, max_value=3), max_size=14),
    b=st.lists(st.integers(min_value=0, max_value=3), max_size=14),
)
def test_myers_finds_a_longest_common_subsequence(a: list[int], b: list[int]) -> None:
    """The hand-written Myers diff matches as many lines as an exact LCS, in order."""
    blocks = _myers(a, b)
    assert blocks is not None
    assert _assert_valid(blocks, a, b) == _lcs_length(a, b)


def test_very_different_files_still_get_a_valid_alignment() -> None:
    """Past the Myers budget the approximate matcher still yields in-order equal runs."""
    a = [f"a{i % 40}\n".encode() for i in range(2500)]
    b = [f"a{(i * 7) % 40}\n".encode() for i in range(2500)]
    blocks = matching_blocks(a, b)
    assert blocks[-1] == (len(a), len(b), 0)
    _assert_valid(blocks, a, b)


def _slid_line_by_line(
    a: list[bytes], b: list[bytes], blocks: list[tuple[int, int, int]]
) -> list[tuple[int, int, int]]:
    """The sliding as first written, a line at a time: the reference for `_slid`."""
    changed_a, changed_b = [True] * len(a), [True] * len(b)
    for i, j, size in blocks:
        changed_a[i : i + size] = [False] * size
        changed_b[j : j + size] = [False] * size
    for lines, changed in ((a, changed_a), (b, changed_b)):
        i, n = 0, len(lines)
        while i < n:
            if not changed[i]:
                i += 1
                continue
            start = i
            while i < n and changed[i]:
                i += 1
            end = i
            while end < n and lines[start] == lines[end]:
                changed[start], changed[end] = False, True
                start, end = start + 1, end + 1
                while end < n and changed[end]:
                    end += 1
            i = end
    result: list[tuple[int, int, int]] = []
    kept_a = [i for i, c in enumerate(changed_a) if not c]
    kept_b = [j for j, c in enumerate(changed_b) if not c]
    for i, j in zip(kept_a, kept_b, strict=True):
        if result and result[-1][0] + result[-1][2] == i and result[-1][1] + result[-1][2] == j:
            result[-1] = (result[-1][0], result[-1][1], result[-1][2] + 1)
        else:
            result.append((i, j, 1))
    result.append((len(a), len(b), 0))
    return result


@settings(max_examples=400, deadline=None)
@given(
    a=st.lists(st.sampled_from([b"x\n", b"y\n", b"z\n"]), max_size=12),
    b=st.lists(st.sampled_from([b"x\n", b"y\n", b"z\n"]), max_size=12),
)
def test_sliding_by_runs_matches_sliding_line_by_line(a: list[bytes], b: list[bytes]) -> None:
    """`_slid` finds runs with list searches and skips the walk when nothing slides;
    it gives what the line walk gives, from Myers' blocks (which rarely slide) and
    from difflib's longest-run blocks (which put many insertions too high)."""
    ids: dict[bytes, int] = {}
    myers = _myers(
        [ids.setdefault(x, len(ids)) for x in a], [ids.setdefault(x, len(ids)) for x in b]
    )
    assert myers is not None
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    longest = [(m.a, m.b, m.size) for m in matcher.get_matching_blocks() if m.size]
    for blocks in (myers, longest):
        assert _slid(a, b, blocks) == _slid_line_by_line(a, b, blocks)


def test_an_insertion_matched_too_high_slides_down_as_git_puts_it() -> None:
    """An inserted line that could sit above or below an equal line goes below it."""
    a, b = [b"a\n", b"b\n"], [b"a\n", b"a\n", b"b\n"]
    # Matched to the second `a`, the insertion is the first; it slides to the second.
    assert _slid(a, b, [(0, 1, 2)]) == [(0, 0, 1), (1, 2, 1), (2, 3, 0)]
    # Matched to the first, nothing slides and the blocks are kept as they are.
    assert _slid(a, b, [(0, 0, 1), (1, 2, 1)]) == [(0, 0, 1), (1, 2, 1), (2, 3, 0)]


def test_blocks_that_touch_are_joined_into_one_run() -> None:
    """Two blocks where one ends as the next begins, on both sides, are one run."""
    lines = [b"x\n", b"y\n"]
    assert _slid(lines, lines, [(0, 0, 1), (1, 1, 1)]) == [(0, 0, 2), (2, 2, 0)]
