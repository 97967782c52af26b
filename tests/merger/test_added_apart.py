"""One statement both sides added, each at a place of its own, is a conflict.

Found by an independent review of the driver: keyed by its text, the statement both sides
added meets itself as one entity and is kept once, at one side's place, so the other
side's copy is lost (``plt.show()`` after each side's own plot). Kept twice, a statement
one side meant once would run twice; the author decides.
"""

from __future__ import annotations

import pytest

from workers.entity_merge import merge_file

CASES = {
    "python": (
        "plots.py",
        b"import matplotlib.pyplot as plt\n\nplt.plot([1])\n\nplt.plot([2])\n",
        b"plt.plot([1])\n",
        b"plt.show()\n",
    ),
    "typescript": (
        "log.ts",
        b"import { a } from './a';\n\nrun(a);\n\nstop(a);\n",
        b"run(a);\n",
        b"flush();\n",
    ),
}


@pytest.mark.parametrize("language", list(CASES))
def test_one_statement_each_side_added_at_a_place_of_its_own_is_a_conflict(
    language: str,
) -> None:
    path, base, first, added = CASES[language]
    ours = base.replace(first, first + added)
    theirs = base + added
    result = merge_file(base, ours, theirs, path)
    assert not result.clean, result.content
    assert "added by both at different places" in result.content.decode()


@pytest.mark.parametrize("language", list(CASES))
def test_one_statement_both_sides_added_at_one_place_is_kept_once(language: str) -> None:
    path, base, first, added = CASES[language]
    both = base.replace(first, first + added)
    ours = b"// ours\n" + both if path.endswith(".ts") else b"# ours\n" + both
    theirs = both.replace(b"stop(a)", b"halt(a)").replace(b"[2]", b"[3]")
    assert theirs != both  # theirs changed something of its own too
    result = merge_file(base, ours, theirs, path)
    assert result.clean, result.conflicts
    assert result.content.count(added) == 1


def test_one_function_both_sides_added_at_places_of_their_own_is_kept_once() -> None:
    """A named entity is defined once wherever it stands: only statements count."""
    base = b"def a():\n    pass\n\n\ndef b():\n    pass\n"
    helper = b"\n\ndef helper():\n    return 1\n"
    ours = base.replace(b"def a():\n    pass\n", b"def a():\n    pass\n" + helper)
    theirs = base + helper
    result = merge_file(base, ours, theirs, "m.py")
    assert result.clean, result.conflicts
    assert result.content.count(b"def helper") == 1
