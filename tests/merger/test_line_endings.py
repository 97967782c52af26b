"""One side converting a file's line endings against the other side's edits.

Found blind in the third held-out set (RxJava's Pattern1.java): theirs turned the file's
CRLF into LF, ours edited it in CRLF, and the merge kept CRLF on the lines ours touched
and on a base line next to them, LF elsewhere: a file neither side wrote.
"""

from __future__ import annotations

import pytest

from workers.entity_merge import merge_file

PY = b"def a():\n    return 1\n\n\ndef b():\n    return 2\n\n\ndef c():\n    return 3\n"


def crlf(data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


@pytest.mark.parametrize("path", ["m.py", "notes.txt"])
def test_a_conversion_to_lf_against_an_edit_in_crlf_gives_the_edit_in_lf(path: str) -> None:
    edited = PY.replace(b"return 2", b"return 20")
    result = merge_file(crlf(PY), crlf(edited), PY, path)
    assert result.clean
    assert result.content == edited


def test_a_conversion_to_crlf_against_an_edit_in_lf_gives_the_edit_in_crlf() -> None:
    edited = PY.replace(b"return 3", b"return 30")
    result = merge_file(PY, crlf(PY), edited, "m.py")
    assert result.clean
    assert result.content == crlf(edited)


def test_both_sides_converting_and_editing_different_entities_merge_in_lf() -> None:
    ours = PY.replace(b"return 1", b"return 10")
    theirs = PY.replace(b"return 3", b"return 30")
    result = merge_file(crlf(PY), ours, theirs, "m.py")
    assert result.clean
    assert result.content == PY.replace(b"return 1", b"return 10").replace(
        b"return 3", b"return 30"
    )


def test_a_conflict_after_a_conversion_is_written_in_the_new_ending() -> None:
    result = merge_file(
        crlf(PY),
        crlf(PY.replace(b"return 2", b"return 20")),
        PY.replace(b"return 2", b"return 22"),
        "m.py",
    )
    assert not result.clean
    assert b"\r" not in result.content
    assert b"return 20" in result.content and b"return 22" in result.content


def test_a_file_that_already_mixes_endings_is_merged_as_it_is() -> None:
    """No side converted anything: each keeps the ending of the lines it wrote."""
    base = PY.replace(b"return 1\n", b"return 1\r\n")
    result = merge_file(
        base,
        base.replace(b"return 2", b"return 20"),
        base.replace(b"return 3", b"return 30"),
        "m.py",
    )
    assert result.clean
    assert result.content == base.replace(b"return 2", b"return 20").replace(
        b"return 3", b"return 30"
    )
    assert result.content.count(b"\r\n") == 1


def test_a_json_file_converted_on_one_side_merges_its_keys_in_the_new_ending() -> None:
    base = b'{\n  "a": 1,\n  "b": 2\n}\n'
    result = merge_file(crlf(base), crlf(base.replace(b'"a": 1', b'"a": 10')), base, "c.json")
    assert result.clean
    assert result.content == base.replace(b'"a": 1', b'"a": 10')


def test_a_conflict_after_a_conversion_to_crlf_shows_its_hunks_in_crlf() -> None:
    """The hunks are what the author is shown: each must be found in the written file."""
    result = merge_file(
        PY,
        crlf(PY.replace(b"return 2", b"return 20")),
        PY.replace(b"return 2", b"return 22"),
        "m.py",
    )
    assert not result.clean
    assert result.content.count(b"\n") == result.content.count(b"\r\n")
    hunks = [h for c in result.conflicts for h in c.hunks]
    assert hunks
    for hunk in hunks:
        for side in (hunk.ours, hunk.theirs):
            assert side.encode().count(b"\n") == side.encode().count(b"\r\n")
            assert side.encode() in result.content
