"""The line-count checks on a merge (`doubled`): lines counted after collapsing spacing,
so one line written with other spacing is still the same line."""

from __future__ import annotations

from workers.entity_merge.doubled import LineCounts, doubled_lines, repeated_lines, revived_lines

BASE = b"def run():\n    setup()\n    x = compute()\n    return x\n"


def test_a_line_every_version_holds_once_is_reported_when_merged_twice_in_two_spacings() -> None:
    merged = BASE + b"x  =  compute()\n"
    assert repeated_lines(LineCounts(BASE, BASE, BASE, merged)) == [b"x = compute()"]
    assert repeated_lines(LineCounts(BASE, BASE, BASE, BASE)) == []


def test_a_comment_every_version_holds_once_counts_when_merged_twice() -> None:
    """Comments count for this check (a comment is what travels with two entities),
    though the other checks pass over them."""
    base = b"# keep in sync with the parser\n" + BASE
    merged = base + b"# keep in sync with the parser\n"
    assert repeated_lines(LineCounts(base, base, base, merged)) == [
        b"# keep in sync with the parser"
    ]


def test_a_line_one_side_deleted_and_the_merge_revived_elsewhere_is_reported() -> None:
    ours = BASE.replace(b"    setup()\n", b"")
    merged = ours + b"setup()\n"
    assert revived_lines(LineCounts(BASE, ours, BASE, merged)) == [b"setup()"]
    # Skipped lines (the imports check judges those) are not reported.
    assert revived_lines(LineCounts(BASE, ours, BASE, merged), skip=frozenset({b"setup()"})) == []


def test_a_line_both_sides_added_once_is_reported_when_merged_twice() -> None:
    ours = BASE.replace(b"    return x\n", b"    log(x)\n    return x\n")
    theirs = BASE.replace(b"    setup()\n", b"    setup()\n    log(x)\n")
    merged = theirs.replace(b"    return x\n", b"    log(x)\n    return x\n")
    assert doubled_lines(BASE, ours, theirs, merged) == [b"log(x)"]
    # Spacing alone does not make two lines: "log(x)" and "log(x)  " are one.
    spaced = theirs.replace(b"    return x\n", b"    log(x)   \n    return x\n")
    assert doubled_lines(BASE, ours, theirs, spaced) == [b"log(x)"]
    assert doubled_lines(BASE, ours, theirs, theirs) == []
