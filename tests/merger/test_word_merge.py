"""The word-level second look at a line clash (workers/entity_merge/words.py).

Two edits of touching lines, or an edit inside a block the other side re-indented, are
settled; two rewrites of one line (even in different words), a word both sides
inserted at different places, and any clash outside an entity merge (a file with no
grammar) stay conflicts. The cases named after a repository are the wrong merges an
earlier, looser version made on the real-history corpus.
"""

from __future__ import annotations

import pytest

from workers.entity_merge import merge_file
from workers.entity_merge.line_merge import split_lines
from workers.entity_merge.words import merge_words


def _words(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    settled = merge_words(split_lines(base), split_lines(ours), split_lines(theirs))
    return None if settled is None else b"".join(settled)


def test_edits_of_different_words_of_one_line_still_clash() -> None:
    """One side renames the call, the other adds an argument: both rewrote the line."""
    base = b"    total = compute(items, tax)\n"
    ours = b"    total = compute_total(items, tax)\n"
    theirs = b"    total = compute(items, tax, discount)\n"
    assert _words(base, ours, theirs) is None


def test_two_halves_of_a_version_string_are_not_spliced() -> None:
    """sympy's release.py: "1.14.dev" against "1.13.0" must not become "1.14.0"."""
    base = b'__version__ = "1.13.dev"\n'
    ours = b'__version__ = "1.14.dev"\n'
    theirs = b'__version__ = "1.13.0"\n'
    assert _words(base, ours, theirs) is None


def test_an_edit_is_not_copied_into_the_other_sides_commented_out_line() -> None:
    """ansible's letsencrypt.py: ours kept the old line as a comment above its rewrite."""
    base = b"        if cmp(contact, result['contact']) != 0:\n            update = True\n"
    ours = (
        b"        # if cmp(contact, result['contact']) != 0:\n"
        b"        if contact != result['contact']:\n            update = True\n"
    )
    theirs = b"        if contact != result['contact']:\n            update = True\n"
    assert _words(base, ours, theirs) is None


def test_two_fixes_of_one_condition_are_not_stacked() -> None:
    """ipython's completerlib.py: ours rewrote the test, theirs appended a clause."""
    base = b"    return isfile(join(path, '__init__.py'))\n"
    ours = b"    return any(isfile(join(path, '__init__' + s[0])) for s in get_suffixes())\n"
    theirs = b"    return isfile(join(path, '__init__.py')) or isfile(join(path, '__init__.pyc'))\n"
    assert _words(base, ours, theirs) is None


def test_edits_of_two_touching_lines_both_land() -> None:
    base = b"    a = 1\n    b = 2\n"
    ours = b"    a = 10\n    b = 2\n"
    theirs = b"    a = 1\n    b = 20\n"
    assert _words(base, ours, theirs) == b"    a = 10\n    b = 20\n"


def test_a_reindented_block_keeps_the_other_sides_edit_inside_it() -> None:
    base = b"    x = load()\n    save(x)\n"
    ours = b"    if ready:\n        x = load()\n        save(x)\n"
    theirs = b"    x = load()\n    save(x, fresh=True)\n"
    assert _words(base, ours, theirs) == (
        b"    if ready:\n        x = load()\n        save(x, fresh=True)\n"
    )


def test_an_edit_of_the_line_next_to_an_inserted_one_clashes() -> None:
    """meteor's accounts_tests.js: theirs inserted a test right above the one ours
    edited, and the words put ours' edit on the inserted copy."""
    base = b"  Tinytest.add('b', test => {\n"
    ours = b"  Tinytest.addAsync('b', async test => {\n"
    theirs = b"  Tinytest.add('a', test => {});\n  Tinytest.add('b', test => {\n"
    assert _words(base, ours, theirs) is None


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


def test_a_python_function_edited_on_two_touching_lines_merges_clean() -> None:
    ours = PY_BASE.replace(b"item.cost * rate", b"item.net_cost * rate")
    theirs = PY_BASE.replace(b"round(net, 2)", b"round(net, 4)")
    result = merge_file(PY_BASE, ours, theirs, "shop/price.py")
    assert result.clean, result.conflicts
    assert result.content == ours.replace(b"round(net, 2)", b"round(net, 4)")


def test_a_python_function_edited_in_the_same_word_still_conflicts_by_name() -> None:
    ours = PY_BASE.replace(b"round(net, 2)", b"round(net, 3)")
    theirs = PY_BASE.replace(b"round(net, 2)", b"round(net, 4)")
    result = merge_file(PY_BASE, ours, theirs, "shop/price.py")
    assert [c.label for c in result.conflicts] == ["function price"]


def test_a_file_without_a_grammar_is_not_merged_by_words() -> None:
    base = b"a = 1\nb = 2\n"
    ours = b"a = 10\nb = 2\n"
    theirs = b"a = 1\nb = 20\n"
    assert not merge_file(base, ours, theirs, "notes.txt").clean
    assert merge_file(base, ours, theirs, "notes.py").content == b"a = 10\nb = 20\n"


def test_one_conversion_made_by_both_sides_at_two_places_is_not_run_twice() -> None:
    """ansible's tacp_instance.py: ours converts where the value is read, theirs where
    it is made; both on touching lines would call `.to_dict()` twice."""
    base = b"        props = get(uuid)\n        state = props['status']\n"
    ours = b"        props = get(uuid)\n        state = props.to_dict()['status']\n"
    theirs = b"        props = get(uuid).to_dict()\n        state = props['status']\n"
    assert _words(base, ours, theirs) is None


def test_two_settings_each_turned_on_are_two_changes() -> None:
    base = b"    minify: false,\n    sourcemap: false,\n"
    ours = b"    minify: true,\n    sourcemap: false,\n"
    theirs = b"    minify: false,\n    sourcemap: true,\n"
    assert _words(base, ours, theirs) == b"    minify: true,\n    sourcemap: true,\n"


def test_a_line_added_beside_a_line_the_other_side_rewrote_clashes() -> None:
    """The words would combine here, but a line put next to one the other side changed
    is refused on that alone: on real history such pairs were one statement fixed
    twice, or (meteor's accounts_tests.js above) an edit that went to the wrong copy."""
    base = b"    host = config.host\n    timeout = 30\n"
    ours = b"    host = config.host\n    timeout = settings.timeout\n"
    theirs = b"    host = config.host\n    retries = 3\n    timeout = 30\n"
    assert _words(base, ours, theirs) is None


def test_a_word_alignment_that_keeps_a_deleted_line_is_refused() -> None:
    """Line by line, theirs deleted the line `b`; word by word, ours' deletion of `a b`
    can be read as deleting only `a`, and the merge would keep a `b` line. The merged
    lines must be the sides' line edits applied to the base, so it is a clash."""
    base = b"a b\nb\nf(b)\n"
    ours = b"b\nf(b)\na\n"
    theirs = b"a b\nf(b)\n"
    assert _words(base, ours, theirs) is None


LOOP_BASE = b"""class Store:
    def add_all(self, items):
        for item in items:
            self.items.append(item)
            self.save()
"""


def test_a_line_added_beside_a_line_the_other_side_moved_out_of_a_block_clashes() -> None:
    """Ours moves `self.save()` out of the loop; theirs adds a line above it, inside
    the loop. Merged word by word the added line sits between the loop body and a
    dedented line at an indentation neither side wrote for it."""
    ours = LOOP_BASE.replace(b"            self.save()", b"        self.save()")
    theirs = LOOP_BASE.replace(
        b"            self.save()", b"            self.count += 1\n            self.save()"
    )
    result = merge_file(LOOP_BASE, ours, theirs, "store.py")
    assert [c.label for c in result.conflicts] == ["method Store.add_all"]


def test_neighbouring_lines_re_indented_by_different_sides_clash() -> None:
    """Ours dedents one line of a loop body, theirs indents the line after the loop:
    each alone is a valid program, both together an `IndentationError`."""
    base = (
        b"def run(items):\n    for item in items:\n        load(item)\n        log(item)\n"
        b"    save()\n"
    )
    ours = base.replace(b"        log(item)", b"    log(item)")
    theirs = base.replace(b"    save()", b"        save()")
    assert _words(base, ours, theirs) is None
    assert not merge_file(base, ours, theirs, "run.py").clean


def test_a_negation_made_at_two_places_is_not_applied_twice() -> None:
    """Ours negates where the value is made, theirs where it is used: both is no change."""
    base = b"    d = a - b\n    return move(d)\n"
    ours = b"    d = -(a - b)\n    return move(d)\n"
    theirs = b"    d = a - b\n    return move(-d)\n"
    assert _words(base, ours, theirs) is None


def test_a_scale_applied_at_two_places_is_not_applied_twice() -> None:
    base = b"    share = done / total\n    print(share)\n"
    ours = b"    share = done / total * 100\n    print(share)\n"
    theirs = b"    share = done / total\n    print(share * 100)\n"
    assert _words(base, ours, theirs) is None


def test_spacing_inside_a_string_is_an_edit_of_its_line() -> None:
    """Both sides changed the line (ours only the spaces inside the string), so the
    words are not spliced."""
    base = b'    return "%d  items" % n\n'
    ours = b'    return "%d items" % n\n'
    theirs = b'    return "%d  items" % (n + 1)\n'
    assert _words(base, ours, theirs) is None


def test_a_struct_re_aligned_by_gofmt_keeps_the_other_sides_edit() -> None:
    """Ours adds a longer field and gofmt re-aligns the others; theirs edits a tag.
    Spacing between the words of a line, outside strings, is layout."""
    base = b'type Limits struct {\n\tRate  int `yaml:"rate"`\n\tBurst int `yaml:"burst"`\n}\n'
    ours = (
        b"type Limits struct {\n"
        b'\tRate      int `yaml:"rate"`\n'
        b'\tBurst     int `yaml:"burst"`\n'
        b'\tMaxSeries int `yaml:"max_series"`\n'
        b"}\n"
    )
    theirs = base.replace(b'`yaml:"burst"`', b'`yaml:"burst_size"`')
    result = merge_file(base, ours, theirs, "limits.go")
    assert result.clean, result.conflicts
    assert result.content == ours.replace(b'`yaml:"burst"`', b'`yaml:"burst_size"`')


def test_white_space_trimmed_from_a_blank_line_is_no_re_indent() -> None:
    """ipython's transformers.py: theirs trimmed trailing white space (a blank line's
    too), ours put spaces after commas on the two lines above."""
    base = b"    f = get(fmt,key) \n    k = get(fmt,tpl)\n    \n    return f, k\n"
    ours = b"    f = get(fmt, key)\n    k = get(fmt, tpl)\n    \n    return f, k\n"
    theirs = b"    f = get(fmt,key)\n    k = get(fmt,tpl)\n\n    return f, k\n"
    assert _words(base, ours, theirs) == ours.replace(b"    \n", b"\n")


def test_a_line_added_to_a_block_both_sides_dedented_alike_lands() -> None:
    """webpack's Defaults.unittest.js: both sides moved a snapshot to column 0, ours
    added a line to it and theirs changed one two lines below."""
    base = b'\t\t"name": "a",\n\t\t"profile": false,\n\t\t"store": "pack",\n\t\t"type": "fs",\n'
    ours = b'"name": "a",\n"profile": false,\n"purge": false,\n"store": "pack",\n"type": "fs",\n'
    theirs = b'"name": "a",\n"profile": false,\n"store": "pack",\n"type": "disk",\n'
    assert _words(base, ours, theirs) == (
        b'"name": "a",\n"profile": false,\n"purge": false,\n"store": "pack",\n"type": "disk",\n'
    )


def test_two_packages_bumped_to_one_minor_version_are_two_changes() -> None:
    """meteor's dev-bundle-server-package.js: numbers inside versions are not counted
    as one change made twice."""
    base = b'  "fibers": "4.0.1",\n  "promise": "8.0.2",\n'
    ours = b'  "fibers": "4.0.3",\n  "promise": "8.0.2",\n'
    theirs = b'  "fibers": "4.0.1",\n  "promise": "8.0.3",\n'
    assert _words(base, ours, theirs) == b'  "fibers": "4.0.3",\n  "promise": "8.0.3",\n'


def test_a_call_added_where_a_value_is_read_and_where_it_is_used_is_not_made_twice() -> None:
    """Ours calls `obj.size()`, theirs calls `size()`: merged, an int would be called."""
    base = b"    size = obj.size\n    print(size)\n"
    ours = b"    size = obj.size()\n    print(size)\n"
    theirs = b"    size = obj.size\n    print(size())\n"
    assert _words(base, ours, theirs) is None


def test_a_question_mark_added_at_both_ends_is_not_applied_twice() -> None:
    base = b"    let v = read();\n    process(v);\n"
    ours = b"    let v = read()?;\n    process(v);\n"
    theirs = b"    let v = read();\n    process(v?);\n"
    assert _words(base, ours, theirs) is None
    assert not merge_file(b"fn f() {\n" + base + b"}\n", ours, theirs, "f.rs").clean


def test_a_sign_each_side_dropped_at_its_own_place_is_not_dropped_twice() -> None:
    """Each side makes `f` return -x, one where `d` is made, one where it is returned;
    both dropped would return x again."""
    base = b"    d = -x\n    return -d\n"
    ours = b"    d = x\n    return -d\n"
    theirs = b"    d = -x\n    return d\n"
    assert _words(base, ours, theirs) is None


def test_an_edit_of_a_line_the_other_side_moved_out_of_its_loop_clashes() -> None:
    """Theirs passes the loop's `item`, ours moved the call after the loop: merged, it
    would save only the last item. Only a block moved deeper (wrapped) takes edits."""
    base = (
        b"        for item in items:\n            self.items.append(item)\n"
        b"            self.save()\n"
    )
    ours = base.replace(b"            self.save()", b"        self.save()")
    theirs = base.replace(b"self.save()", b"self.save(item)")
    assert _words(base, ours, theirs) is None


def test_in_a_brace_language_a_dedented_line_takes_the_other_sides_edit() -> None:
    """kafka's DelayedShareFetchTest.java: ours re-wrapped a call and dedented its last
    line, theirs added an argument to that line. Indentation is only layout there; in
    Python the same moves are refused (the test above)."""
    base = b"        call(\n                a,\n                b);\n"
    ours = b"        call(a,\n            b);\n"
    theirs = b"        call(\n                a,\n                b, c);\n"
    merged = merge_words(
        split_lines(base), split_lines(ours), split_lines(theirs), blocks_by_indent=False
    )
    assert merged is not None and b"".join(merged) == b"        call(a,\n            b, c);\n"
    assert _words(base, ours, theirs) is None


def test_a_call_made_twice_with_more_words_around_one_of_them_clashes() -> None:
    base = b"    size = obj.size\n    print(size)\n"
    ours = b"    size = obj.size()\n    print(size)\n"
    theirs = b"    size = obj.size\n    print(size() + 1)\n"
    assert _words(base, ours, theirs) is None


def test_a_sign_dropped_here_and_replaced_there_is_not_dropped_twice() -> None:
    base = b"    d = -x\n    return -d\n"
    ours = b"    d = x\n    return -d\n"
    theirs = b"    d = -x\n    return (d)\n"
    assert _words(base, ours, theirs) is None


def test_a_decimal_scale_applied_at_two_places_is_not_applied_twice() -> None:
    base = b"    a = b\n    print(a)\n"
    ours = b"    a = 1.5 * b\n    print(a)\n"
    theirs = b"    a = b\n    print(a * 1.5)\n"
    assert _words(base, ours, theirs) is None


def test_spacing_next_to_a_quote_a_line_cannot_place_is_what_the_line_says() -> None:
    """A Rust lifetime's quote is no string: `'static str = "don'` must not be read as
    one, which would make ours' spacing edit inside the real string layout."""
    base = b"    let s: &'static str = \"don't  panic\";\n    go(s);\n"
    ours = b"    let s: &'static str = \"don't panic\";\n    go(s);\n"
    theirs = b"    let s: &'static str = \"don't  panic!\";\n    go(s);\n"
    assert _words(base, ours, theirs) is None


def test_one_field_both_sides_added_aligned_differently_is_kept_once() -> None:
    """terraform and cortex: each side added the field, gofmt aligned it to its neighbours."""
    base = b"package p\n\ntype T struct {\n\tFile *File\n}\n"
    ours = b"package p\n\ntype T struct {\n\tFile *File\n\tMode Mode\n}\n"
    theirs = (
        b"package p\n\ntype T struct {\n\tFile        *File\n\tContextOpts *Opts\n"
        b"\tMode        Mode\n}\n"
    )
    result = merge_file(base, ours, theirs, "p.go")
    assert result.clean
    assert result.content.count(b"Mode ") == 1
    assert b"ContextOpts *Opts" in result.content


def test_one_statement_both_sides_wrote_with_other_spacing_is_kept_once() -> None:
    """ember.js: `let plugin =  inject(...)` against `let plugin = inject(...)`."""
    base = b"def build(source):\n    tree = load(source)\n    return tree\n"
    ours = base.replace(b"    return", b"    plugin = inject(source)\n    return")
    theirs = base.replace(b"    return", b"    plugin =  inject(source)\n    return")
    result = merge_file(base, ours, theirs, "build.py")
    assert result.clean
    assert result.content == ours


def test_spacing_inside_a_string_both_sides_added_still_clashes() -> None:
    base = b"def show():\n    pass\n"
    ours = b'def show():\n    print("a  b")\n'
    theirs = b'def show():\n    print("a b")\n'
    assert not merge_file(base, ours, theirs, "show.py").clean


@pytest.mark.parametrize(
    ("path", "opening", "closing"),
    [
        ("s.ts", b"    /**", b"     */"),
        ("S.java", b"    /**", b"     */"),
        ("s.rs", b"    /*", b"     */"),
    ],
    ids=["typescript", "java", "rust"],
)
def test_spacing_one_side_took_out_of_a_block_comment_is_not_lost(
    path: str, opening: bytes, closing: bytes
) -> None:
    """pixijs's TextureSource.ts (fourth held-out set): both sides turned a one-line doc
    comment into a block, theirs also taking out a double space, and the merge kept
    ours' line as theirs "written alike". In a comment spacing is prose: a conflict."""
    field = {
        "s.ts": b"    count = 1;\n",
        "S.java": b"    int count = 1;\n",
        "s.rs": b"    count: u8,\n",
    }
    head = {"s.ts": b"class S {\n", "S.java": b"class S {\n", "s.rs": b"struct S {\n"}
    base = head[path] + opening + b" The count. this is  overridden */\n" + field[path] + b"}\n"

    def block(text: bytes) -> bytes:
        return opening + b"\n     * The count.\n     * " + text + b"\n" + closing + b"\n"

    old = opening + b" The count. this is  overridden */\n"
    ours = base.replace(old, block(b"this is  overridden, read only"))
    theirs = base.replace(old, block(b"this is overridden, read only"))
    result = merge_file(base, ours, theirs, path)
    assert not result.clean, result.content
    assert "inside a string or comment spanning lines" in result.note


def test_one_line_both_sides_added_at_other_indentation_still_clashes() -> None:
    """In Python the indentation says which block the line runs in."""
    base = b"def run(items):\n    for item in items:\n        use(item)\n"
    ours = base + b"        done()\n"
    theirs = base + b"    done()\n"
    assert not merge_file(base, ours, theirs, "run.py").clean


@pytest.mark.parametrize(
    ("path", "base", "ours", "theirs"),
    [
        pytest.param(
            "help.py",
            b'HELP = """\nusage:\n"""\n',
            b'HELP = """\nusage:\n  -v    verbose\n"""\n',
            b'HELP = """\nusage:\n  -v  verbose\n"""\n',
            id="python docstring",
        ),
        pytest.param(
            "help.js",
            b"const s = `\nhead\n`;\n",
            b"const s = `\nhead\na    b\n`;\n",
            b"const s = `\nhead\na b\n`;\n",
            id="javascript template literal",
        ),
        pytest.param(
            "help.go",
            b"package p\n\nvar s = `\nhead\n`\n",
            b"package p\n\nvar s = `\nhead\nx    y\n`\n",
            b"package p\n\nvar s = `\nhead\nx y\n`\n",
            id="go raw string",
        ),
    ],
)
def test_a_line_inside_a_string_spanning_lines_is_not_written_alike(
    path: str, base: bytes, ours: bytes, theirs: bytes
) -> None:
    """An independent review: spacing inside a multi-line string is content."""
    assert not merge_file(base, ours, theirs, path).clean


@pytest.mark.parametrize(
    ("path", "base", "ours", "theirs"),
    [
        pytest.param(
            "greet.py",
            b'def f():\n    """Say hi.\n\n    Returns  the greeting.\n    """\n',
            b'def f():\n    """Say hi.\n\n    Returns the greeting.\n    """\n',
            b'def f():\n    """Say hi.\n\n    Returns  the message.\n    """\n',
            id="python docstring, spacing against a word",
        ),
        pytest.param(
            "greet.py",
            b'def f():\n    """Say hi.\n\n    Returns the greeting.\n    """\n',
            b'def f():\n    """Say hi.\n\n        Returns the greeting.\n    """\n',
            b'def f():\n    """Say hi.\n\n    Returns the message.\n    """\n',
            id="python docstring, indentation against a word",
        ),
        pytest.param(
            "note.js",
            b"const s = `\nhead\nto  be  done\n`;\n",
            b"const s = `\nhead\nto be  done\n`;\n",
            b"const s = `\nhead\nto  be  gone\n`;\n",
            id="javascript template literal",
        ),
        pytest.param(
            "note.go",
            b"package p\n\nvar s = `\nhead\nx  y  z\n`\n",
            b"package p\n\nvar s = `\nhead\nx y  z\n`\n",
            b"package p\n\nvar s = `\nhead\nx  y  w\n`\n",
            id="go raw string, spacing",
        ),
        pytest.param(
            "note.go",
            b"package p\n\nvar s = `\nhead\n  x y z\n`\n",
            b"package p\n\nvar s = `\nhead\n    x y z\n`\n",
            b"package p\n\nvar s = `\nhead\n  x y w\n`\n",
            id="go raw string, indentation",
        ),
        pytest.param(
            "note.rs",
            b'fn f() -> &str {\n    r"\nhead\nx  y  z\n"\n}\n',
            b'fn f() -> &str {\n    r"\nhead\nx y  z\n"\n}\n',
            b'fn f() -> &str {\n    r"\nhead\nx  y  w\n"\n}\n',
            id="rust raw string",
        ),
        pytest.param(
            "Note.java",
            b'class F {\n    String s = """\n        x  y  z\n        """;\n}\n',
            b'class F {\n    String s = """\n        x y  z\n        """;\n}\n',
            b'class F {\n    String s = """\n        x  y  w\n        """;\n}\n',
            id="java text block",
        ),
        pytest.param(
            "job.go",
            b"package p\n\nvar s = `\nhead\nrun  job  one\nrun  job  two\n`\n",
            b"package p\n\nvar s = `\nhead\nrun job  one\nrun job  two\n`\n",
            b"package p\n\nvar s = `\nhead\nrun  job  two\nrun  job  two\n`\n",
            id="go raw string, combined line equal to a line one side wrote below it",
        ),
        pytest.param(
            "job.py",
            b'def f():\n    """Jobs.\n\n    run  job  one\n    run  job  two\n    """\n',
            b'def f():\n    """Jobs.\n\n    run job  one\n    run job  two\n    """\n',
            b'def f():\n    """Jobs.\n\n    run  job  two\n    run  job  two\n    """\n',
            id="python docstring, combined line equal to a line one side wrote below it",
        ),
        pytest.param(
            "keep.py",
            b'def f():\n    """D.\n    Keeps  the old value.\n    Keeps the new value.\n    """\n',
            b'def f():\n    """D.\n    Keeps  the new value.\n    Keeps the new  value.\n    """\n',
            b'def f():\n    """D.\n    Keeps the old value.\n    Keeps the new value.\n    """\n',
            id="python docstring, combined line equal to the other side's line below it",
        ),
        pytest.param(
            "keep.js",
            b"const s = `\nKeeps  the old value.\nKeeps the new value.\n`;\n",
            b"const s = `\nKeeps  the new value.\nKeeps the new  value.\n`;\n",
            b"const s = `\nKeeps the old value.\nKeeps the new value.\n`;\n",
            id="javascript template, combined line equal to the other side's line below it",
        ),
        pytest.param(
            "last.js",
            b"const s = `\nhead\n  hello world`;\n",
            b"const s = `\nhead\n      hello world`;\n",
            b"const s = `\nhead\n  hello there`;\n",
            id="javascript template, its last line closing the statement",
        ),
        pytest.param(
            "last.go",
            b"package p\n\nvar s = f(`\nhead\n    x y z`)\n",
            b"package p\n\nvar s = f(`\nhead\n        x y z`)\n",
            b"package p\n\nvar s = f(`\nhead\n    x y w`)\n",
            id="go raw string, its last line closing the call",
        ),
        pytest.param(
            "last.rs",
            b'fn f() {\n    g(r"\nhead\n  x y z");\n}\n',
            b'fn f() {\n    g(r"\nhead\n      x y z");\n}\n',
            b'fn f() {\n    g(r"\nhead\n  x y w");\n}\n',
            id="rust raw string, its last line closing the call",
        ),
        pytest.param(
            "Last.java",
            b'class F {\n    String s = f("""\n        head\n        x y z""");\n}\n',
            b'class F {\n    String s = f("""\n        head\n            x y z""");\n}\n',
            b'class F {\n    String s = f("""\n        head\n        x y w""");\n}\n',
            id="java text block, its last line closing the call",
        ),
        pytest.param(
            "last.py",
            b'def g():\n    f("""\nhead\n    x y z""")\n',
            b'def g():\n    f("""\nhead\n        x y z""")\n',
            b'def g():\n    f("""\nhead\n    x y w""")\n',
            id="python string, its last line closing the call",
        ),
        pytest.param(
            "joined.py",
            b'x = """\nhead\n    x y z""" "tail"\n',
            b'x = """\nhead\n        x y z""" "tail"\n',
            b'x = """\nhead\n    x y w""" "tail"\n',
            id="python string joined to another, its last line",
        ),
        pytest.param(
            "sub.js",
            b"const s = `\nhead\n  ${a}\n`;\n",
            b"const s = `\nhead\n      ${a}\n`;\n",
            b"const s = `\nhead\n  ${b}\n`;\n",
            id="javascript template, a substitution alone on its line",
        ),
        pytest.param(
            "sub0.js",
            b"const s = `\nhead\n    ${gamma}\n`;\n",
            b"const s = `\nhead\n${gamma}\n`;\n",
            b"const s = `\nhead\n    ${beta}\n`;\n",
            id="javascript template, a substitution moved to the first column",
        ),
        pytest.param(
            "sub.py",
            b'x = f"""\nhead\n    {name}\n"""\n',
            b'x = f"""\nhead\n        {name}\n"""\n',
            b'x = f"""\nhead\n    {name.upper()}\n"""\n',
            id="python f-string, an interpolation alone on its line",
        ),
    ],
)
def test_words_and_spacing_of_one_line_inside_a_string_spanning_lines_clash(
    path: str, base: bytes, ours: bytes, theirs: bytes
) -> None:
    """Inside a multi-line string spacing is content: one side re-spacing or re-indenting
    a line and the other editing its words are two rewrites of one line of text."""
    result = merge_file(base, ours, theirs, path)
    assert not result.clean
    assert "inside a string or comment spanning lines" in result.note


def test_words_and_spacing_of_one_line_of_code_still_merge() -> None:
    """The same two edits of a line of code combine: there the spacing is layout."""
    base = b"package p\n\nfunc g() {\n\tx := f(a,  b,  c)\n\t_ = x\n}\n"
    ours = b"package p\n\nfunc g() {\n\tx := f(a, b,  c)\n\t_ = x\n}\n"
    theirs = b"package p\n\nfunc g() {\n\tx := f(a,  b,  d)\n\t_ = x\n}\n"
    result = merge_file(base, ours, theirs, "g.go")
    assert result.clean
    assert result.content == b"package p\n\nfunc g() {\n\tx := f(a, b,  d)\n\t_ = x\n}\n"


@pytest.mark.parametrize(
    ("path", "base", "ours", "theirs", "merged"),
    [
        pytest.param(
            "a.js",
            b'const s = `head ${[\n  a(1,  2),\n  b(3)\n].join("")} tail`;\n',
            b'const s = `head ${[\n  a(1, 2),\n  b(3)\n].join("")} tail`;\n',
            b'const s = `head ${[\n  a(1,  2, 5),\n  b(3)\n].join("")} tail`;\n',
            b'const s = `head ${[\n  a(1, 2, 5),\n  b(3)\n].join("")} tail`;\n',
            id="javascript template substitution",
        ),
        pytest.param(
            "a.ts",
            b'const s: string = `head ${[\n  a(1,  2),\n  b(3)\n].join("")} tail`;\n',
            b'const s: string = `head ${[\n  a(1, 2),\n  b(3)\n].join("")} tail`;\n',
            b'const s: string = `head ${[\n  a(1,  2, 5),\n  b(3)\n].join("")} tail`;\n',
            b'const s: string = `head ${[\n  a(1, 2, 5),\n  b(3)\n].join("")} tail`;\n',
            id="typescript template substitution",
        ),
        pytest.param(
            "a.py",
            b'x = f"""head {max(\n    a(1,  2),\n    b(3))} tail"""\n',
            b'x = f"""head {max(\n    a(1, 2),\n    b(3))} tail"""\n',
            b'x = f"""head {max(\n    a(1,  2, 5),\n    b(3))} tail"""\n',
            b'x = f"""head {max(\n    a(1, 2, 5),\n    b(3))} tail"""\n',
            id="python f-string interpolation",
        ),
        pytest.param(
            "a.py",
            b'def f():\n    msg = (\n        "one two "\n        "three four"\n    )\n',
            b'def f():\n    msg = (\n        "one two "\n            "three four"\n    )\n',
            b'def f():\n    msg = (\n        "one two "\n        "three five"\n    )\n',
            b'def f():\n    msg = (\n        "one two "\n            "three five"\n    )\n',
            id="python strings concatenated across lines",
        ),
    ],
)
def test_code_between_or_inside_strings_spanning_lines_still_merges(
    path: str, base: bytes, ours: bytes, theirs: bytes, merged: bytes
) -> None:
    """The corpus (webpack's ExternalModule.js, apollo-client's apiExtractor.ts): a line
    of code inside a `${…}` is code, and so is the layout between strings Python joins,
    so re-spacing there and a word edit of the line combine."""
    result = merge_file(base, ours, theirs, path)
    assert result.clean, result.note
    assert result.content == merged


def test_a_docstring_line_one_side_reindented_and_both_trimmed_still_merges() -> None:
    """sympy's symbol.py: both sides dropped a trailing space, one also re-indented the
    docstring; that side's line already holds the other's change, so it is the merge."""
    base = b'def f():\n    """Doc.\n\n        >>> alpha\n        a \n    """\n    return 1\n'
    ours = b'def f():\n    """Doc.\n\n        >>> alpha\n        a\n    """\n    return 1\n'
    theirs = b'def f():\n    """Doc.\n\n    >>> alpha\n    a\n    """\n    return 2\n'
    result = merge_file(base, ours, theirs, "symbol.py")
    assert result.clean, result.note
    assert result.content == theirs


@pytest.mark.parametrize(
    ("path", "base"),
    [
        (
            "sum.ts",
            b"export class Sum {\n  /**\n   * Adds the numbers given.\n   */\n"
            b"  add(a: number, b: number): number {\n    return a + b;\n  }\n}\n",
        ),
        (
            "Sum.java",
            b"class Sum {\n  /**\n   * Adds the numbers given.\n   */\n"
            b"  int add(int a, int b) {\n    return a + b;\n  }\n}\n",
        ),
    ],
    ids=["typescript", "java"],
)
def test_a_block_comment_re_indented_keeps_the_other_sides_word_edit(
    path: str, base: bytes
) -> None:
    """A comment's indentation is layout, as code's is: only the spacing between its words
    is prose (found by an independent review of the rule above)."""
    ours = base.replace(b"  ", b"    ")
    theirs = base.replace(b"numbers", b"integers")
    result = merge_file(base, ours, theirs, path)
    assert result.clean, result.note
    assert result.content == ours.replace(b"numbers", b"integers")
