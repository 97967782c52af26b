"""Rust and Java: what their own constructs (impl blocks, use lists, overloads, imports)
do in an entity merge. The shared scenarios of entity_merge_cases.py run on Rust too."""

from __future__ import annotations

from workers.entity_merge import language_for_path, merge_file

RUST_BASE = b"""use std::collections::{HashMap, HashSet};
use crate::price::round;

/// A cart.
#[derive(Debug)]
pub struct Cart {
    items: Vec<u32>,
}

impl Cart {
    pub fn new() -> Self {
        Cart { items: vec![] }
    }

    pub fn total(&self) -> u32 {
        let sum = self.items.iter().sum();
        round(sum)
    }
}

impl fmt::Display for Cart {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "cart")
    }
}
"""

JAVA_BASE = b"""package shop;

import java.util.List;
import java.util.Map;

public class Cart {
    private final List<Integer> items;

    public Cart(List<Integer> items) {
        this.items = items;
    }

    public int total() {
        int sum = 0;
        return sum;
    }
}
"""


def _edit(text: bytes, *pairs: tuple[bytes, bytes]) -> bytes:
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def _parses(path: str, content: bytes) -> bool:
    spec = language_for_path(path)
    assert spec is not None
    return spec.parses(content)


def test_rust_methods_added_to_two_impl_blocks_and_a_field_merge_cleanly() -> None:
    """Each side's additions to an inherent impl, a trait impl and a struct are kept."""
    ours = _edit(
        RUST_BASE,
        (b"    items: Vec<u32>,\n", b"    items: Vec<u32>,\n    owner: String,\n"),
        (
            b"        round(sum)\n    }\n}\n",
            b"        round(sum)\n    }\n\n    pub fn len(&self) -> usize {\n"
            b"        self.items.len()\n    }\n}\n",
        ),
    )
    theirs = _edit(
        RUST_BASE,
        (
            b'        write!(f, "cart")\n    }\n',
            b'        write!(f, "cart")\n    }\n\n    fn extra(&self) {}\n',
        ),
        (b"        Cart { items: vec![] }\n", b"        Cart { items: Vec::new() }\n"),
    )
    result = merge_file(RUST_BASE, ours, theirs, "src/cart.rs")
    assert result.clean, result.conflicts
    assert result.strategy == "entity"
    content = result.content
    for piece in (b"owner: String", b"pub fn len", b"fn extra", b"Vec::new()"):
        assert content.count(piece) == 1, piece
    assert content.index(b"pub fn len") < content.index(b"impl fmt::Display")
    assert content.index(b"fn extra") > content.index(b"impl fmt::Display")
    assert _parses("src/cart.rs", content)


def test_rust_both_sides_editing_one_line_of_a_method_conflict_naming_it() -> None:
    """The same line of `Cart::total` changed two ways stays a conflict."""
    ours = _edit(RUST_BASE, (b"        round(sum)\n", b"        round(sum) + 1\n"))
    theirs = _edit(RUST_BASE, (b"        round(sum)\n", b"        round(sum) * 2\n"))
    result = merge_file(RUST_BASE, ours, theirs, "src/cart.rs")
    assert not result.clean
    assert [(c.label, c.reason) for c in result.conflicts] == [
        ("method Cart.total", "both-modified")
    ]


def test_rust_use_lists_merge_as_sets_of_names() -> None:
    """Names added to one `use` list by both sides are unioned, in the list's sorted order."""
    ours = _edit(RUST_BASE, (b"{HashMap, HashSet}", b"{BTreeMap, HashMap, HashSet}"))
    theirs = _edit(RUST_BASE, (b"{HashMap, HashSet}", b"{HashMap, HashSet, VecDeque}"))
    result = merge_file(RUST_BASE, ours, theirs, "src/cart.rs")
    assert result.clean, result.conflicts
    assert b"use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};\n" in result.content
    assert result.content.count(b"use std::collections") == 1


def test_rust_a_name_dropped_from_a_use_list_that_the_other_side_newly_uses_conflicts() -> None:
    """Theirs drops `HashSet`; ours starts using it: a clean merge would not compile."""
    ours = _edit(
        RUST_BASE,
        (b"        let sum", b"        let seen: HashSet<u32> = HashSet::new();\n        let sum"),
    )
    theirs = _edit(RUST_BASE, (b"{HashMap, HashSet}", b"{HashMap}"))
    result = merge_file(RUST_BASE, ours, theirs, "src/cart.rs")
    assert not result.clean
    assert "HashSet" in result.conflicts[0].label or any(
        "HashSet" in h.ours for c in result.conflicts for h in c.hunks
    )


def test_rust_the_same_use_added_by_both_sides_is_kept_once() -> None:
    """Two sides adding one `use` line get it once, not twice."""
    added = b"use crate::price::round;\nuse crate::tax::rate;\n"
    ours = _edit(RUST_BASE, (b"use crate::price::round;\n", added))
    theirs = _edit(
        RUST_BASE,
        (b"use crate::price::round;\n", added),
        (b"        round(sum)\n", b"        round(sum) * rate()\n"),
    )
    result = merge_file(RUST_BASE, ours, theirs, "src/cart.rs")
    assert result.clean, result.conflicts
    assert result.content.count(b"use crate::tax::rate;") == 1


def test_java_members_and_imports_added_by_both_sides_are_all_kept_in_order() -> None:
    """New methods and imports from both sides survive; imports stay sorted."""
    ours = _edit(
        JAVA_BASE,
        (b"import java.util.Map;\n", b"import java.util.Map;\nimport java.util.Set;\n"),
        (b"        return sum;\n    }\n", b"        return sum;\n    }\n\n    void a() {}\n"),
    )
    theirs = _edit(
        JAVA_BASE,
        (b"import java.util.List;\n", b"import java.util.ArrayList;\nimport java.util.List;\n"),
        (b"        return sum;\n    }\n", b"        return sum;\n    }\n\n    void b() {}\n"),
    )
    result = merge_file(JAVA_BASE, ours, theirs, "src/shop/Cart.java")
    assert result.clean, result.conflicts
    assert result.content.startswith(
        b"package shop;\n\nimport java.util.ArrayList;\nimport java.util.List;\n"
        b"import java.util.Map;\nimport java.util.Set;\n"
    )
    assert result.content.index(b"void a()") < result.content.index(b"void b()")
    assert _parses("src/shop/Cart.java", result.content)


def test_java_an_added_overload_is_not_taken_for_an_edit_of_its_namesake() -> None:
    """Ours adds `total(int)`; theirs edits `total()`: both are kept, each as written."""
    ours = _edit(
        JAVA_BASE,
        (
            b"        return sum;\n    }\n",
            b"        return sum;\n    }\n\n    public int total(int extra) {\n"
            b"        return total() + extra;\n    }\n",
        ),
    )
    theirs = _edit(JAVA_BASE, (b"        int sum = 0;\n", b"        int sum = items.size();\n"))
    result = merge_file(JAVA_BASE, ours, theirs, "src/shop/Cart.java")
    assert result.clean, result.conflicts
    assert b"int sum = items.size();" in result.content
    assert b"return total() + extra;" in result.content


def test_java_a_signature_change_next_to_a_body_edit_keeps_both() -> None:
    """Ours gives `total` a parameter; theirs edits the line below: neither edit is lost.

    The two lines touch, so a line merge calls it a clash; their words do not overlap.
    """
    ours = _edit(JAVA_BASE, (b"public int total() {", b"public int total(int extra) {"))
    theirs = _edit(JAVA_BASE, (b"        int sum = 0;\n", b"        int sum = items.size();\n"))
    result = merge_file(JAVA_BASE, ours, theirs, "src/shop/Cart.java")
    assert result.clean, result.conflicts
    assert result.content == _edit(
        ours, (b"        int sum = 0;\n", b"        int sum = items.size();\n")
    )


def test_java_a_signature_change_against_a_body_edit_on_one_line_is_a_conflict() -> None:
    """Both sides change the parameter list of `total`, differently: no silent pick."""
    ours = _edit(JAVA_BASE, (b"public int total() {", b"public int total(int extra) {"))
    theirs = _edit(JAVA_BASE, (b"public int total() {", b"public int total(long extra) {"))
    result = merge_file(JAVA_BASE, ours, theirs, "src/shop/Cart.java")
    assert not result.clean


def test_java_both_sides_editing_one_line_conflict_naming_the_method() -> None:
    """The same line of `total()` changed two ways is a conflict on that method."""
    ours = _edit(JAVA_BASE, (b"        int sum = 0;\n", b"        int sum = 1;\n"))
    theirs = _edit(JAVA_BASE, (b"        int sum = 0;\n", b"        int sum = 2;\n"))
    result = merge_file(JAVA_BASE, ours, theirs, "src/shop/Cart.java")
    assert not result.clean
    assert [(c.label, c.reason) for c in result.conflicts] == [
        ("method Cart.total()", "both-modified")
    ]


def test_java_an_import_one_side_dropped_and_the_other_newly_uses_conflicts() -> None:
    """Theirs drops `import java.util.Map`; ours starts using Map: not a clean merge."""
    ours = _edit(
        JAVA_BASE,
        (
            b"        int sum = 0;\n",
            b"        Map<String, Integer> m = null;\n        int sum = 0;\n",
        ),
    )
    theirs = _edit(JAVA_BASE, (b"import java.util.Map;\n", b""))
    result = merge_file(JAVA_BASE, ours, theirs, "src/shop/Cart.java")
    assert not result.clean


# The three wrong merges read on the real-history corpus (rust-clippy twice, held-out
# hibernate-orm once), each cut down to its pattern.


def test_rust_an_import_one_side_rebinds_and_the_other_drops_conflicts() -> None:
    """Ours keeps `LintContext` as `_`; theirs drops it: the import must not survive."""
    base = b"use rustc_lint::{LateContext, LintContext};\n\nfn f() {}\n"
    ours = base.replace(b"LintContext}", b"LintContext as _}")
    theirs = base.replace(b", LintContext}", b"}")
    result = merge_file(base, ours, theirs, "src/misc.rs")
    assert not result.clean
    assert "LintContext" in result.conflicts[0].hunks[0].ours


def test_rust_a_comment_line_is_not_doubled_by_a_deletion_below_it() -> None:
    """Ours deletes the attribute under a header comment; theirs adds a comment next to
    it: the header comment stays once (it ran twice on rust-clippy)."""
    base = b"//@aux-build:a.rs\n#![allow(unused)]\n#![warn(x)]\n\nfn f() {}\n"
    ours = b"//@aux-build:a.rs\n#![warn(x)]\n\nfn f() {}\n"
    theirs = b"//@aux-build:a.rs\n//@aux-build:b.rs\n\n#![warn(x)]\n#![allow(y)]\n\nfn f() {}\n"
    result = merge_file(base, ours, theirs, "tests/ui/a.rs")
    assert not result.clean or result.content.count(b"//@aux-build:a.rs") == 1


def test_java_one_new_method_added_by_both_sides_with_different_parameters_conflicts() -> None:
    """Two sides writing the same new test, one with a parameter: not both kept."""
    test = b"    @Test\n    public void testRender(%s) {\n        run();\n    }\n\n"
    base = b"class T {\n    void run() {}\n\n}\n"
    ours = base.replace(b"\n}\n", b"\n" + test % b"" + b"}\n")
    theirs = base.replace(b"\n}\n", b"\n" + test % b"Scope scope" + b"}\n")
    result = merge_file(base, ours, theirs, "src/T.java")
    assert not result.clean
    assert result.conflicts[0].reason == "both-added"


def test_java_an_annotated_parameter_is_an_edit_of_the_method_not_a_new_overload() -> None:
    """Ours annotates `total`'s parameter types; theirs edits its body: one method, both
    edits, not two overloads."""
    base = JAVA_BASE.replace(b"public int total() {", b"public int total(List<Integer> more) {")
    ours = _edit(
        base, (b"total(List<Integer> more)", b"total(@Nullable List<@Nullable Integer> more)")
    )
    theirs = _edit(base, (b"        return sum;\n", b"        return sum + more.size();\n"))
    result = merge_file(base, ours, theirs, "src/shop/Cart.java")
    assert result.clean, result.conflicts
    assert b"total(@Nullable List<@Nullable Integer> more)" in result.content
    assert b"return sum + more.size();" in result.content
    assert result.content.count(b"public int total(") == 1
