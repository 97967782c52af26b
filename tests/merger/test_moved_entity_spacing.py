"""The blank lines above an entity one side moved, when the other side re-spaced it.

Found blind in the fourth held-out set (helm's pkg/chart/v2/util/save_test.go): ours
moved the `require` import from the last group of an import block up to a group of its
own after the standard library; theirs added `assert` just above `require` where it
was, so `assert` took the blank line over and `require` had none. The merge took
theirs' empty gap to `require`'s new place and glued it to `"time"`, losing a blank
line all three versions had there.
"""

from __future__ import annotations

from workers.entity_merge import merge_file


def test_a_go_import_moved_to_a_group_of_its_own_keeps_the_blank_line_above_it() -> None:
    base = (
        b'package p\n\nimport (\n\t"time"\n\n\t"helm.sh/loader"\n\n'
        b'\t"github.com/stretchr/testify/require"\n)\n\nfunc F() {}\n'
    )
    ours = (
        b'package p\n\nimport (\n\t"time"\n\n\t"github.com/stretchr/testify/require"\n\n'
        b'\t"helm.sh/loader"\n)\n\nfunc F() {}\n'
    )
    theirs = base.replace(
        b'\t"github.com/stretchr/testify/require"\n',
        b'\t"github.com/stretchr/testify/assert"\n\t"github.com/stretchr/testify/require"\n',
    )
    result = merge_file(base, ours, theirs, "p.go")
    assert result.clean, result.conflicts
    assert result.content == ours.replace(
        b'\t"helm.sh/loader"\n)', b'\t"helm.sh/loader"\n\n\t"github.com/stretchr/testify/assert"\n)'
    )


def test_a_python_import_moved_up_keeps_the_blank_line_above_it() -> None:
    base = b"import os\n\nimport attr\n\nimport requests\n\n\ndef f():\n    return os\n"
    ours = b"import os\n\nimport requests\n\nimport attr\n\n\ndef f():\n    return os\n"
    theirs = base.replace(b"import requests\n", b"import idna\nimport requests\n")
    result = merge_file(base, ours, theirs, "m.py")
    assert result.clean, result.conflicts
    assert result.content == ours.replace(b"import attr\n", b"import attr\n\nimport idna\n")


def test_spacing_changed_in_place_on_both_sides_still_merges_by_lines() -> None:
    """No side moved the entity: the gaps merge as before (theirs' re-spacing lands)."""
    base = b"import os\n\nimport attr\n\n\ndef f():\n    return os\n"
    ours = base.replace(b"return os", b"return os.sep")
    theirs = base.replace(b"import os\n\nimport attr", b"import os\nimport attr")
    result = merge_file(base, ours, theirs, "m.py")
    assert result.clean, result.conflicts
    assert result.content == theirs.replace(b"return os", b"return os.sep")


def test_the_entity_after_two_swapped_ones_did_not_move_and_keeps_the_re_spacing() -> None:
    """Ours swapped `a` and `b`; theirs put more blank lines above `c`, which neither side
    moved (its neighbour changed, not its place): theirs' spacing lands."""
    base = b"package p\n\nfunc a() {}\n\nfunc b() {}\n\nfunc c() {}\n"
    ours = b"package p\n\nfunc b() {}\n\nfunc a() {}\n\nfunc c() {}\n"
    theirs = base.replace(b"\n\nfunc c", b"\n\n\n\nfunc c")
    result = merge_file(base, ours, theirs, "a.go")
    assert result.clean, result.conflicts
    assert result.content == ours.replace(b"\n\nfunc c", b"\n\n\n\nfunc c")
