"""Entity-merge behaviour beyond the per-language scenarios: statements, order, bytes."""

from __future__ import annotations

import pytest

from workers.entity_merge import merge_file
from workers.entity_merge.entities import Entity, extract
from workers.entity_merge.languages import language_for_path
from workers.entity_merge.line_merge import split_lines
from workers.entity_merge.matching import align_repeats

MAIN = b"""def a():
    return 1


if __name__ == "__main__":
    x = 1
    y = 2
    z = 3
    print(x, y, z)
"""

THREE = b"def a():\n    return 1\n\n\ndef b():\n    return 2\n\n\ndef c():\n    return 3\n"


def test_an_unnamed_statement_both_sides_edit_apart_merges_inside_it() -> None:
    """Edits on different lines of an `if __name__` block are both kept."""
    result = merge_file(
        MAIN, MAIN.replace(b"x = 1", b"x = 10"), MAIN.replace(b"z = 3", b"z = 30"), "m.py"
    )
    assert result.clean
    assert result.content == MAIN.replace(b"x = 1", b"x = 10").replace(b"z = 3", b"z = 30")


def test_an_unnamed_statement_edited_on_one_line_by_both_is_a_conflict() -> None:
    """Two edits to one line of an unnamed statement conflict instead of both surviving."""
    result = merge_file(
        MAIN, MAIN.replace(b"x = 1", b"x = 10"), MAIN.replace(b"x = 1", b"x = 11"), "m.py"
    )
    [conflict] = result.conflicts
    assert conflict.label == 'statement if __name__ == "__main__":'
    assert result.content.count(b"\nif __name__") == 1


def test_a_one_line_statement_edited_by_both_sides_conflicts_under_its_base_text() -> None:
    """Statements are known by their base text, so a both-edited call is one conflict."""
    result = merge_file(b'print("a")\n', b'print("b")\n', b'print("c")\n', "m.py")
    assert [c.label for c in result.conflicts] == ['statement print("a")']


def test_a_method_conflict_is_named_with_its_class() -> None:
    """A collision inside a method names `method Cart.total`, not just `total`."""
    base = (
        b"class Cart:\n    def total(self):\n        return 0\n\n"
        b"    def size(self):\n        return 1\n"
    )
    result = merge_file(
        base,
        base.replace(b"return 0", b"return 10"),
        base.replace(b"return 0", b"return 20"),
        "c.py",
    )
    assert [c.label for c in result.conflicts] == ["method Cart.total"]
    assert b"<<<<<<< ours (method Cart.total)\n" in result.content


def test_a_go_method_is_parented_by_its_receiver_type() -> None:
    """`func (c *Cart) Total()` and `func Total()` are different entities."""
    base = (
        b"package main\n\nfunc (c *Cart) Total() int {\n\treturn 0\n}\n\n"
        b"func Total() int {\n\treturn 1\n}\n"
    )
    clean = merge_file(
        base,
        base.replace(b"return 0", b"return 10"),
        base.replace(b"return 1", b"return 11"),
        "c.go",
    )
    assert clean.clean
    collided = merge_file(
        base,
        base.replace(b"return 0", b"return 10"),
        base.replace(b"return 0", b"return 20"),
        "c.go",
    )
    assert [c.label for c in collided.conflicts] == ["method Cart.Total"]


def test_a_doc_comment_travels_with_its_function() -> None:
    """Editing a function's comment and another edit to its body both apply to it."""
    base = b"import functools\n\n\n# helper\n@functools.cache\ndef a():\n    return 1\n"
    result = merge_file(
        base,
        base.replace(b"# helper", b"# Helper."),
        base.replace(b"return 1", b"return 2"),
        "m.py",
    )
    assert result.content == base.replace(b"# helper", b"# Helper.").replace(
        b"return 1", b"return 2"
    )


def test_editing_the_comment_of_a_function_the_other_side_deleted_is_a_conflict() -> None:
    """A comment edit counts as modifying the entity it is attached to."""
    base = b"import functools\n\n\n# helper\ndef a():\n    return 1\n"
    result = merge_file(
        base, base.replace(b"# helper", b"# Helper."), b"import functools\n", "m.py"
    )
    assert [(c.label, c.reason) for c in result.conflicts] == [("function a", "modify-delete")]


def test_one_sided_reordering_is_kept_alongside_the_other_sides_edit() -> None:
    """Theirs moving b above a and ours editing c gives theirs' order with ours' edit."""
    moved = b"def b():\n    return 2\n\n\ndef a():\n    return 1\n\n\ndef c():\n    return 3\n"
    result = merge_file(THREE, THREE.replace(b"return 3", b"return 33"), moved, "m.py")
    assert result.clean
    assert result.content == moved.replace(b"return 3", b"return 33")


def test_conflicting_reorders_fall_back_to_the_line_merge() -> None:
    """When both sides reorder differently, the file is line-merged and says why."""
    ba = b"def b():\n    return 2\n\n\ndef a():\n    return 1\n\n\ndef c():\n    return 3\n"
    ca = b"def c():\n    return 3\n\n\ndef a():\n    return 1\n\n\ndef b():\n    return 2\n"
    result = merge_file(THREE, ba, ca, "m.py")
    assert result.strategy == "line"
    assert result.note == "both sides reordered entities differently"


@pytest.mark.parametrize(
    ("newline", "trailing"),
    [
        pytest.param(b"\n", b"", id="lf-no-final-newline"),
        pytest.param(b"\r\n", b"\r\n", id="crlf"),
    ],
)
def test_line_endings_survive_an_entity_merge(newline: bytes, trailing: bytes) -> None:
    """CRLF files stay CRLF, and a base without a final newline still takes two additions."""
    base = THREE.replace(b"\n", newline).rstrip(b"\r\n") + trailing
    d = b"\n\ndef d():\n    return 4\n".replace(b"\n", newline)
    e = b"\n\ndef e():\n    return 5\n".replace(b"\n", newline)
    body = base.rstrip(b"\r\n") + newline
    result = merge_file(base, body + d, body + e, "m.py")
    assert result.clean
    assert result.content == body + d + e


def test_both_sides_adding_the_same_file_merges_their_entities() -> None:
    """With an empty base (add/add of a file), different functions are unioned."""
    result = merge_file(b"", b"def a():\n    return 1\n", b"def b():\n    return 2\n", "m.py")
    assert result.clean
    assert result.content.startswith(b"def a():") and b"def b():" in result.content


def test_deleting_the_file_against_an_edit_conflicts_on_the_edited_entity() -> None:
    """An emptied file (a deletion) against an edit of b conflicts on b only."""
    result = merge_file(THREE, b"", THREE.replace(b"return 2", b"return 22"), "m.py")
    assert [(c.label, c.reason) for c in result.conflicts] == [("function b", "delete-modify")]


def test_a_clean_merge_that_would_not_parse_is_reported_as_a_conflict() -> None:
    """Edits that are each valid but together break syntax yield a conflict, never broken code."""
    base = b"def f():\n    x = 1\n    2,\n    3,\n    4,\n    y = 5\n"
    ours = base.replace(b"x = 1", b"x = [").replace(b"y = 5", b"]")
    theirs = base.replace(b"3,", b"z = 3")
    result = merge_file(base, ours, theirs, "m.py")
    assert not result.clean
    [conflict] = result.conflicts
    assert (conflict.kind, conflict.reason) == ("file", "result-unparseable")
    assert b"<<<<<<< ours (file m.py: merged result does not parse)" in result.content


def test_a_merge_python_rejects_for_its_indentation_is_a_conflict() -> None:
    """Ours moves the loop out of the `while`, theirs adds a line under the loop body.

    Line by line the edits do not touch, and tree-sitter-python recovers from the
    added line's indentation, but Python rejects the file: a conflict, not broken code.
    """
    base = (
        b"def f(items, y):\n    while y:\n        y = step(y)\n"
        b"        for item in items:\n            use(item)\n    return y\n"
    )
    ours = base.replace(b"        for item", b"    for item")
    theirs = base.replace(b"            use(item)\n", b"            use(item)\n        y += 1\n")
    result = merge_file(base, ours, theirs, "m.py")
    assert {c.reason for c in result.conflicts} == {"result-unparseable"}
    assert "IndentationError" in (result.note or "")


def test_a_merge_python_rejects_past_its_parser_is_a_conflict() -> None:
    """A `from __future__` import must come first: each side put one import on top."""
    base = b"import sys\n\n\ndef f():\n    return 1\n"
    result = merge_file(
        base, b"import os\n" + base, b"from __future__ import annotations\n" + base, "m.py"
    )
    assert {c.reason for c in result.conflicts} == {"result-unparseable"}


def test_python_the_interpreter_rejects_on_both_sides_is_left_to_the_grammar() -> None:
    """Python 2 code: CPython 3 rejects every version, so only the grammar judges."""
    base = b"def f():\n    print 'a'\n    return 1\n\n\ndef g():\n    return 2\n"
    ours = base.replace(b"return 1", b"return 10")
    theirs = base.replace(b"return 2", b"return 20")
    result = merge_file(base, ours, theirs, "m.py")
    assert result.clean, result.note
    assert result.content == ours.replace(b"return 2", b"return 20")


def test_emptying_a_class_from_both_sides_is_not_a_clean_merge() -> None:
    """Each side deleting a different last method would leave `class A:` bare: a conflict."""
    base = b"class A:\n    def m(self):\n        return 1\n\n    def n(self):\n        return 2\n"
    ours = b"class A:\n    def n(self):\n        return 2\n"
    theirs = b"class A:\n    def m(self):\n        return 1\n"
    result = merge_file(base, ours, theirs, "m.py")
    assert not result.clean
    assert {c.reason for c in result.conflicts} == {"result-unparseable"}
    assert result.note == "the entity merge result did not parse"


def test_statements_sharing_a_line_fall_back_to_the_line_merge() -> None:
    """`x = 1; y = 2` cannot be cut into entities by line, so the line merge runs."""
    base = b"x = 1; y = 2\n\n\ndef f():\n    return 1\n"
    result = merge_file(
        base, base.replace(b"x = 1", b"x = 0"), base.replace(b"return 1", b"return 2"), "m.py"
    )
    assert result.strategy == "line"
    assert result.note.startswith("statements share a line")
    assert result.clean


@pytest.mark.parametrize(
    "path",
    [pytest.param("notes.txt", id="txt"), pytest.param("Makefile", id="no-extension")],
)
def test_files_without_a_grammar_are_line_merged(path: str) -> None:
    """Unknown extensions get the line merge, and the note names the extension."""
    result = merge_file(b"a\nb\nc\nd\n", b"A\nb\nc\nd\n", b"a\nb\nc\nD\n", path)
    assert (result.strategy, result.language, result.clean) == ("line", None, True)
    assert result.content == b"A\nb\nc\nD\n"
    assert "no entity grammar" in result.note


def test_tsx_is_merged_with_the_tsx_grammar() -> None:
    """JSX in a .tsx file parses and merges at entity level."""
    base = b'import React from "react";\n\nexport function A() {\n  return <div>a</div>;\n}\n'
    result = merge_file(
        base,
        base + b"\nexport function B() {\n  return <b />;\n}\n",
        base + b"\nexport function C() {\n  return <i />;\n}\n",
        "ui/view.tsx",
    )
    assert (result.strategy, result.language, result.clean) == ("entity", "tsx", True)


def test_a_typescript_interface_merges_member_by_member() -> None:
    """Two sides adding different members to one interface keep both."""
    base = b"export interface Cart {\n  id: string;\n}\n"
    result = merge_file(
        base,
        base.replace(b"  id: string;\n", b"  id: string;\n  total: number;\n"),
        base.replace(b"  id: string;\n", b"  id: string;\n  owner(): string;\n"),
        "cart.ts",
    )
    assert (
        result.content
        == b"export interface Cart {\n  id: string;\n  total: number;\n  owner(): string;\n}\n"
    )


def test_python_imports_added_by_both_sides_next_to_each_other_are_kept() -> None:
    """`from x import a` extended differently by each side keeps both lines (Python allows it)."""
    base = b"from x import a\n\n\ndef f():\n    return a\n"
    result = merge_file(
        base,
        base.replace(b"from x import a\n", b"from x import a\nfrom y import b\n"),
        base.replace(b"from x import a\n", b"from x import a\nfrom z import c\n"),
        "m.py",
    )
    assert result.content.startswith(b"from x import a\nfrom y import b\nfrom z import c\n")


def test_python_grammar_rules_reject_an_empty_body() -> None:
    """The Python spec treats `class A:` with nothing below as broken, as Python does."""
    spec = language_for_path("m.py")
    assert spec is not None
    assert not spec.parses(b"class A:\n")
    assert not spec.parses(b"def f():\n    # only a comment\n")
    assert spec.parses(b"class A:\n    pass\n")


def test_conflict_marker_size_is_honoured() -> None:
    """A custom marker size (git's %L) sets the width of every marker."""
    base = b"def f():\n    return 0\n"
    result = merge_file(
        base, base.replace(b"0", b"1"), base.replace(b"0", b"2"), "m.py", marker_size=10
    )
    assert b"\n<<<<<<<<<< ours (function f)\n" in result.content
    assert b"\n==========\n" in result.content


def test_binary_files_are_never_line_merged() -> None:
    """A NUL byte marks a file binary: one-sided changes pass, two-sided ones conflict."""
    base, ours, theirs = b"\0\x01base", b"\0\x01ours", b"\0\x01theirs"
    assert merge_file(base, ours, base, "blob.py").content == ours
    result = merge_file(base, ours, theirs, "blob.py")
    assert [(c.kind, c.reason) for c in result.conflicts] == [("file", "binary")]
    assert result.content == ours


def test_a_renamed_class_still_merges_member_by_member() -> None:
    """Ours renaming a class and theirs adding a method to it gives the renamed class with it."""
    base = (
        b"class Cart:\n    def total(self):\n        return 0\n\n"
        b"    def size(self):\n        return 1\n"
    )
    added = b"\n    def owner(self):\n        return None\n"
    result = merge_file(base, base.replace(b"class Cart", b"class Basket"), base + added, "c.py")
    assert result.clean
    assert result.content == base.replace(b"class Cart", b"class Basket") + added


def test_a_rename_beside_a_less_alike_new_entity_still_takes_the_other_sides_edit() -> None:
    """Ours renames f to g and adds a shorter h; theirs edits f: g gets the edit."""
    base = b"def f(x):\n    a = x + 1\n    b = a * 2\n    return b\n"
    renamed = base.replace(b"def f", b"def g")
    other = b"\n\ndef h(x):\n    a = x + 1\n    return a\n"
    result = merge_file(base, renamed + other, base.replace(b"a * 2", b"a * 3"), "m.py")
    assert result.clean
    assert result.content == renamed.replace(b"a * 2", b"a * 3") + other


def test_an_unrelated_function_in_a_deleted_ones_place_is_not_a_rename() -> None:
    """Deleting f and adding a dissimilar g where it was, against an edit of f, conflicts on f."""
    base = b"def f(x):\n    a = x + 1\n    b = a * 2\n    return b\n"
    ours = b"def g(items):\n    for item in items:\n        print(item)\n"
    theirs = base.replace(b"a * 2", b"a * 3")
    result = merge_file(base, ours, theirs, "m.py")
    assert [(c.label, c.reason) for c in result.conflicts] == [("function f", "delete-modify")]


def test_one_go_blank_check_both_sides_added_is_kept_once() -> None:
    """Theirs adds `var _ A` and `var _ B`, ours the same `var _ A` alone: one `var _ A`.

    `_` may be declared any number of times, so theirs' two were keyed by their text
    and ours' one by its name, and the same line was kept twice."""
    base = b"package p\n\nfunc F() {}\n"
    check = b"\nvar _ A = (*T)(nil)\n"
    result = merge_file(base, base + check, base + check + b"\nvar _ B = (*T)(nil)\n", "m.go")
    assert result.clean
    assert result.content == base + check + b"\nvar _ B = (*T)(nil)\n"


def test_one_rust_anonymous_const_both_sides_added_is_kept_once() -> None:
    """Rust's `const _` binds nothing either (`LanguageSpec.blank_names`): the same
    compile-time check added by both sides, one of them adding a second, is kept once."""
    base = b"fn f() {}\n"
    check = b"\nconst _: () = assert!(1 == 1);\n"
    other = b"\nconst _: () = assert!(2 == 2);\n"
    result = merge_file(base, base + check, base + check + other, "m.rs")
    assert result.clean, result.conflicts
    assert result.content == base + check + other


def test_a_blank_name_is_known_by_its_text_only_where_the_language_says_so() -> None:
    """`_` binds nothing in Go and Rust, but is a name like any other in Python (gettext)
    or JavaScript (lodash): only `blank_names` makes a lone addition keyed by its text."""
    spec = language_for_path("m.py")
    assert spec is not None

    def entities(data: bytes) -> tuple[Entity, ...]:
        return extract(spec.parser().parse(data).root_node, split_lines(data), spec).entities

    base = entities(b"x = 1\n")
    side = entities(b"x = 1\n_ = gettext.gettext\n")
    plain = align_repeats(base, side, blank_names=frozenset())
    blank = align_repeats(base, side, blank_names=frozenset({"_"}))
    assert [e.occurrence for e in plain] == [e.occurrence for e in side]
    assert blank[-1].occurrence == "added 0: _ = gettext.gettext\n"


def test_two_sides_binding_python_underscore_differently_conflict() -> None:
    """In Python `_` is a name (gettext's): two sides adding `_ = …` differently was
    merged as both assignments, the second silently overriding the first, while `_`
    was keyed by its text in every language."""
    base = b"import gettext\n\n\ndef f():\n    return 1\n"
    ours = base + b"\n\n_ = gettext.gettext\n"
    theirs = base + b"\n\n_ = gettext.ngettext\n"
    result = merge_file(base, ours, theirs, "m.py")
    assert not result.clean
    assert [(c.kind, c.name, c.reason) for c in result.conflicts] == [
        ("variable", "_", "both-added")
    ]


def test_two_new_iota_blocks_with_blank_constants_merge() -> None:
    """`_ = iota` opens every enum block: two sides adding one block each is no repeat."""
    base = b"package p\n\nconst (\n\t_ = iota\n\tA\n)\n"
    ours = base + b"\nconst (\n\t_ = iota\n\tB\n)\n"
    theirs = base + b"\nconst (\n\t_ = iota\n\tC\n)\n"
    result = merge_file(base, ours, theirs, "m.go")
    assert result.clean, result.note
    assert result.content == ours + b"\nconst (\n\t_ = iota\n\tC\n)\n"


def test_both_sides_replacing_a_call_with_unrelated_functions_merge() -> None:
    """Both delete `setup()` and each adds its own function there: two additions, not two
    rewrites of one statement."""
    base = b"def a():\n    return 1\n\n\nsetup()\n"
    ours = base.replace(b"setup()\n", b"def b():\n    return 2\n")
    theirs = base.replace(b"setup()\n", b"def c():\n    return 3\n")
    result = merge_file(base, ours, theirs, "m.py")
    assert result.clean, result.conflicts
    assert result.content == ours + b"\n\ndef c():\n    return 3\n"


@pytest.mark.parametrize(
    ("path", "ours_method", "theirs_method"),
    [
        (
            "RegExUtils.java",
            b"    public static List<String> findMatchesModifiable(CharSequence s) {\n"
            b"        return new ArrayList<>(find(s));\n    }\n",
            b"    public static List<String> findMatchesModifiabale(CharSequence s) {\n"
            b"        return new ArrayList<>(find(s));\n    }\n",
        ),
        (
            "regex_utils.py",
            b"def find_matches_modifiable(s):\n    return list(find(s))\n",
            b"def find_matches_modifiabale(s):\n    return list(find(s))\n",
        ),
    ],
    ids=["java", "python"],
)
def test_one_function_both_sides_added_under_two_spellings_of_its_name_conflicts(
    path: str, ours_method: bytes, theirs_method: bytes
) -> None:
    """commons-lang's RegExUtils.java (sixth held-out set): both sides added the same
    method at the end of the class, theirs with a typo in its name, and both were kept."""
    if path.endswith(".java"):
        base = b"class RegExUtils {\n    static int x = 1;\n}\n"
        ours = base.replace(b"}\n", b"\n" + ours_method + b"}\n")
        theirs = base.replace(b"}\n", b"\n" + theirs_method + b"}\n")
    else:
        base = b"def find(s):\n    return [s]\n"
        ours = base + b"\n\n" + ours_method
        theirs = base + b"\n\n" + theirs_method
    result = merge_file(base, ours, theirs, path)
    assert not result.clean, result.content.decode()
    assert [c.reason for c in result.conflicts] == ["both-added"]


def test_two_imports_of_alike_modules_both_sides_added_are_both_kept() -> None:
    """An import's name is its module: `./sources/ExternalSource` and
    `./sources/ExternalSources` are two modules, not one misspelt."""
    base = b"export * from './a';\n"
    ours = base + b"export * from './sources/ExternalSource';\n"
    theirs = base + b"export * from './sources/ExternalSources';\n"
    result = merge_file(base, ours, theirs, "index.ts")
    assert result.clean, result.conflicts
    assert result.content == ours + b"export * from './sources/ExternalSources';\n"


@pytest.mark.parametrize(
    ("path", "ours", "theirs"),
    [
        (
            "a_test.go",
            b'func TestIssue101(t *testing.T) { helper(t, "TestIssue101") }\n',
            b'func TestIssue102(t *testing.T) { helper(t, "TestIssue102") }\n',
        ),
        (
            "actions.ts",
            b"export const fetchUserA = createAction('fetchUserA');\n",
            b"export const fetchUserB = createAction('fetchUserB');\n",
        ),
        (
            "users.py",
            b"def get_user(db):\n    return db.get()\n",
            b"def get_users(db):\n    return db.get()\n",
        ),
    ],
    ids=["go-digits", "ts-last-letter", "python-plural"],
)
def test_two_additions_named_as_a_series_are_both_kept(
    path: str, ours: bytes, theirs: bytes
) -> None:
    """Only a slip inside a name pairs two additions: names that differ in a digit or at
    their end are two functions that happen to share their code."""
    heads = {
        "a_test.go": b"package p\n\n",
        "actions.ts": b"import { createAction } from 'x';\n\n",
        "users.py": b"import db\n\n\n",
    }
    base = heads[path]
    separator = b"\n\n" if path.endswith(".py") else b"\n"
    result = merge_file(base, base + ours, base + theirs, path)
    assert result.clean, result.conflicts
    assert result.content == base + ours + separator + theirs
