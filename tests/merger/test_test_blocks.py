"""JavaScript and TypeScript test blocks as entities (workers/entity_merge/languages/ecmascript.py).

`describe("title", () => {…})` is a suite holding its tests as a class holds its
methods, and `it`/`test` with a literal title is one test known by that title. Two
sides adding different tests at one place keep both; one title both sides added, or
one test both sides changed in the same lines, stays a conflict; a call that is not a
test block (a computed title, no callback) stays an unnamed statement.
"""

from __future__ import annotations

from workers.entity_merge import merge_file

BASE = b"""describe("Cart", () => {
  it("starts empty", () => {
    expect(new Cart().size).toBe(0);
  });

  it("totals its items", () => {
    expect(total([1, 2])).toBe(3);
  });
});
"""


def _test(title: bytes, body: bytes) -> bytes:
    return b'  it("' + title + b'", () => {\n    ' + body + b"\n  });\n\n"


def _add(before: bytes, block: bytes, source: bytes = BASE) -> bytes:
    at = source.index(before)
    return source[:at] + block + source[at:]


def test_two_tests_added_at_one_place_are_both_kept() -> None:
    ours = _add(b'  it("totals', _test(b"adds an item", b"expect(add(1).size).toBe(1);"))
    theirs = _add(b'  it("totals', _test(b"removes an item", b"expect(drop(1).size).toBe(0);"))
    result = merge_file(BASE, ours, theirs, "cart.test.js")
    assert result.clean, result.conflicts
    content = result.content
    assert content.count(b'it("adds an item"') == 1
    assert content.count(b'it("removes an item"') == 1
    assert content.index(b"adds an item") < content.index(b"totals its items")
    assert content.index(b"removes an item") < content.index(b"totals its items")


def test_one_title_both_sides_added_with_other_bodies_is_a_conflict() -> None:
    ours = _add(b'  it("totals', _test(b"adds an item", b"expect(add(1).size).toBe(1);"))
    theirs = _add(b'  it("totals', _test(b"adds an item", b"expect(add(2).size).toBe(2);"))
    result = merge_file(BASE, ours, theirs, "cart.test.ts")
    assert not result.clean
    assert [c.label for c in result.conflicts] == ["test Cart.adds an item"]


def test_one_test_both_sides_changed_in_the_same_lines_is_a_conflict() -> None:
    ours = BASE.replace(b"toBe(3)", b"toEqual(3)")
    theirs = BASE.replace(b"total([1, 2])", b"total([1, 2, 0])")
    result = merge_file(BASE, ours, theirs, "cart.test.js")
    assert not result.clean
    assert [c.label for c in result.conflicts] == ["test Cart.totals its items"]


def test_a_test_one_side_changed_and_the_other_deleted_is_a_conflict() -> None:
    ours = BASE.replace(b"toBe(3)", b"toEqual(3)")
    at = BASE.index(b'\n  it("totals')
    theirs = BASE[:at] + b"\n});\n"
    result = merge_file(BASE, ours, theirs, "cart.test.js")
    assert not result.clean


def test_a_call_with_a_computed_title_stays_an_unnamed_statement() -> None:
    """`it(`adds ${n}`, …)` has no title of its own; two such additions still clash."""
    base = b'describe("Cart", () => {\n  const n = 1;\n});\n'
    ours = base.replace(b"  const n = 1;\n", b"  const n = 1;\n  it(`adds ${n}`, () => {});\n")
    theirs = base.replace(b"  const n = 1;\n", b"  const n = 1;\n  it(`drops ${n}`, () => {});\n")
    result = merge_file(base, ours, theirs, "cart.test.js")
    assert not result.clean


def test_one_title_in_other_quotes_is_one_title() -> None:
    """An independent review: `it("adds")` and `it('adds')` are one test."""
    ours = _add(b'  it("totals', _test(b"adds an item", b"expect(add(1).size).toBe(1);"))
    theirs = _add(
        b'  it("totals',
        _test(b"adds an item", b"expect(add(2).size).toBe(2);").replace(
            b'"adds an item"', b"'adds an item'"
        ),
    )
    assert not merge_file(BASE, ours, theirs, "cart.test.js").clean
