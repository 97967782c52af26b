"""A comment one side put at the very top of a file is not pushed down by the other side's
additions above the first entity.

Found blind in the eighth held-out set (black's
tests/data/cases/raw_docstring_no_string_normalization.py): theirs added ``# flags:
--skip-string-normalization`` as line 1, glued to the first function; ours added a class
and more above that function. The comment travelled with the function to line 106, where
black's test harness no longer reads it. Which of the two goes first is the author's
call: a conflict.
"""

from __future__ import annotations

import pytest

from workers.entity_merge import merge_file

# path, base, the comment one side puts at the top, what the other side adds above
CASES = {
    "python": (
        "case.py",
        b"def first():\n    return 1\n",
        b"# flags: --skip-string-normalization\n",
        b"class Added:\n    pass\n\n\n",
    ),
    "typescript": (
        "case.ts",
        b"export function first(): number {\n  return 1;\n}\n",
        b"// @ts-nocheck\n",
        b"export const added = 2;\n\n",
    ),
    "rust": (
        "lib.rs",
        b"use std::fmt;\n\nfn first() {}\n",
        b"//! The crate's own words.\n",
        b"mod added;\n\n",
    ),
}


@pytest.mark.parametrize("swap", [False, True], ids=["theirs-header", "ours-header"])
@pytest.mark.parametrize("language", list(CASES))
def test_a_header_pushed_below_the_other_sides_additions_is_a_conflict(
    language: str, swap: bool
) -> None:
    path, base, header, above = CASES[language]
    headed, added = header + base, above + base
    ours, theirs = (headed, added) if swap else (added, headed)
    result = merge_file(base, ours, theirs, path)
    assert not result.clean, result.content
    assert "which one side put at the top" in result.note


@pytest.mark.parametrize("language", list(CASES))
def test_a_header_beside_changes_further_down_still_merges(language: str) -> None:
    path, base, header, _ = CASES[language]
    theirs = header + base
    ours = base + b"\n// end\n" if language != "python" else base + b"\n# end\n"
    result = merge_file(base, ours, theirs, path)
    assert result.clean, result.conflicts
    assert result.content.startswith(header)
