"""The word-level second look at a line clash (workers/entity_merge/words.py).

Two edits of different words of one line, or of two touching lines, are settled; two
edits of the same words, a run both sides inserted at different places, and any clash
outside an entity merge (a file with no grammar) stay conflicts.
"""

from __future__ import annotations

from workers.entity_merge import merge_file
from workers.entity_merge.line_merge import split_lines
from workers.entity_merge.words import merge_words


def _words(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    settled = merge_words(split_lines(base), split_lines(ours), split_lines(theirs))
    return None if settled is None else b"".join(settled)


def test_edits_of_different_words_of_one_line_both_land() -> None:
    base = b"    total = compute(items, tax)\n"
    ours = b"    total = compute_total(items, tax)\n"
    theirs = b"    total = compute(items, tax, discount)\n"
    assert _words(base, ours, theirs) == b"    total = compute_total(items, tax, discount)\n"


def test_edits_of_two_touching_lines_both_land() -> None:
    base = b"    a = 1\n    b = 2\n"
    ours = b"    a = 10\n    b = 2\n"
    theirs = b"    a = 1\n    b = 20\n"
    assert _words(base, ours, theirs) == b"    a = 10\n    b = 20\n"


def test_a_reindented_block_keeps_the_other_sides_edit_inside_it() -> None:
    base = b"    x = load()\n    save(x)\n"
    ours = b"    if ready:\n        x = load()\n        save(x)\n"
    theirs = b"    x = load(fresh=True)\n    save(x)\n"
    assert _words(base, ours, theirs) == (
        b"    if ready:\n        x = load(fresh=True)\n        save(x)\n"
    )


def test_two_edits_of_the_same_word_clash() -> None:
    assert _words(b"limit = 10\n", b"limit = 20\n", b"limit = 30\n") is None


def test_two_insertions_at_the_same_place_clash() -> None:
    assert _words(b"f(a)\n", b"f(a, b)\n", b"f(a, c)\n") is None


def test_one_run_inserted_by_both_sides_at_different_places_is_not_doubled() -> None:
    """Each side passes `retry=3` once, in a different place: the call must not get two."""
    base = b"call(url, timeout)\n"
    ours = b"call(url, retry=3, timeout)\n"
    theirs = b"call(url, timeout, retry=3)\n"
    assert _words(base, ours, theirs) is None


def test_a_non_ascii_character_is_never_split_between_the_sides() -> None:
    base = "label = 'caf\u00e9'\n".encode()
    ours = "label = 'caf\u00e8'\n".encode()
    theirs = "label = 'caf\u00ea'\n".encode()
    assert _words(base, ours, theirs) is None


PY_BASE = b"""def price(item, rate):
    net = item.cost * rate
    return round(net, 2)
"""


def test_a_python_function_edited_in_two_words_of_one_line_merges_clean() -> None:
    ours = PY_BASE.replace(b"item.cost * rate", b"item.net_cost * rate")
    theirs = PY_BASE.replace(b"item.cost * rate", b"item.cost * (1 + rate)")
    result = merge_file(PY_BASE, ours, theirs, "shop/price.py")
    assert result.clean, result.conflicts
    assert b"net = item.net_cost * (1 + rate)\n" in result.content


def test_a_python_function_edited_in_the_same_word_still_conflicts_by_name() -> None:
    ours = PY_BASE.replace(b"round(net, 2)", b"round(net, 3)")
    theirs = PY_BASE.replace(b"round(net, 2)", b"round(net, 4)")
    result = merge_file(PY_BASE, ours, theirs, "shop/price.py")
    assert [c.label for c in result.conflicts] == ["function price"]


def test_a_file_without_a_grammar_is_not_merged_by_words() -> None:
    base = b"total = compute(items, tax)\n"
    ours = b"total = compute_total(items, tax)\n"
    theirs = b"total = compute(items, tax, discount)\n"
    result = merge_file(base, ours, theirs, "notes.txt")
    assert not result.clean
