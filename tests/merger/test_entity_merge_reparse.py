"""Incremental parsing: a version parsed as an edit of another gets the tree a fresh parse gives."""

from __future__ import annotations

import pytest

from workers.entity_merge.languages import language_for_path
from workers.entity_merge.line_merge import split_lines
from workers.entity_merge.reparse import line_edits, reparse

OLD = b"""import os


def a():
    return 1


def b():
    return 2


def c():
    return 3
"""

EDITS = {
    "edit in the middle": OLD.replace(b"return 2", b"return [\n        2,\n    ]"),
    "edits at both ends": b"import sys\n" + OLD.replace(b"return 3", b"return 33"),
    "no final newline": OLD.rstrip(b"\n"),
    "added at the end without newline": OLD + b"\n\ndef d():\n    return 4",
    "everything moved": OLD.replace(b"def a", b"def z").replace(b"def c", b"def a"),
    "emptied": b"",
    "unchanged": OLD,
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_reparsing_an_edited_version_gives_the_fresh_parse_tree(name: str) -> None:
    """The reused tree equals a fresh parse of the new text, errors and positions included."""
    new = EDITS[name]
    spec = language_for_path("m.py")
    assert spec is not None
    parser = spec.parser()
    tree, start, end = reparse(parser, parser.parse(OLD), split_lines(OLD), split_lines(new), new)
    fresh = parser.parse(new)
    assert str(tree.root_node) == str(fresh.root_node)
    assert tree.root_node.end_point == fresh.root_node.end_point
    assert 0 <= start <= end <= len(new)


def test_many_scattered_edits_are_joined_into_a_few() -> None:
    """Twenty separate one-line edits become at most eight edits that still cover them all."""
    old = [f"line {i}\n".encode() for i in range(200)]
    new = [line.replace(b"line", b"LINE") if i % 10 == 5 else line for i, line in enumerate(old)]
    edits = line_edits(old, new)
    assert 1 <= len(edits) <= 8
    changed = {i for i in range(200) if old[i] != new[i]}
    assert all(any(a0 <= i < a1 for a0, a1, _, _ in edits) for i in changed)
