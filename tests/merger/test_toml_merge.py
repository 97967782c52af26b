"""The TOML merge: by table, key and array element; untouched bytes kept; always parses."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopbus import scaffold
from workers.entity_merge import merge_file
from workers.entity_merge.languages.toml import NotToml, parse
from workers.entity_merge.toml_merge import merge_list

ONE_LINE = b'[project]\nid = "shop"\n\n[[check]]\nid = "tests"\npending = ["a", "b"]\n'

COMMENTED = b"""\
# loopbus.toml: the shop
[project]
id = "shop"   # never renamed

# how the tests run
[[check]]
id = "tests"
command = "pytest -q"
timeout = 120 # seconds
pending = [
    # unit cart
    "tests/t.py::test_cart",
    # unit pay
    "tests/t.py::test_pay",  # the hard one
    "tests/t.py::test_refund",
]

[build]
roster = ["b1"]
mode = "long"
"""


def merged(base: bytes, ours: bytes, theirs: bytes) -> tuple[bytes, list[str]]:
    result = merge_file(base, ours, theirs, "loopbus.toml")
    return result.content, [f"{c.label} ({c.reason})" for c in result.conflicts]


def test_two_units_clearing_their_own_entries_of_a_one_line_list_combine() -> None:
    """Each side removes its own entry of ``pending = ["a", "b"]``: no conflict, the list
    is empty, and nothing else of the file changed."""
    ours = ONE_LINE.replace(b'["a", "b"]', b'["b"]')
    theirs = ONE_LINE.replace(b'["a", "b"]', b'["a"]')
    content, conflicts = merged(ONE_LINE, ours, theirs)
    assert conflicts == []
    assert content == ONE_LINE.replace(b'["a", "b"]', b"[]")
    # and the same the other way round
    assert merged(ONE_LINE, theirs, ours) == (content, [])


def test_one_side_adds_and_the_other_removes_in_one_line_list() -> None:
    """Additions and removals of different elements of one list combine, ours' first."""
    ours = ONE_LINE.replace(b'["a", "b"]', b'["b", "c"]')
    theirs = ONE_LINE.replace(b'["a", "b"]', b'["a", "b", "d"]')
    content, conflicts = merged(ONE_LINE, ours, theirs)
    assert conflicts == []
    assert b'pending = ["b", "c", "d"]\n' in content


def test_the_scaffolds_list_cleared_by_every_unit_in_any_order() -> None:
    """The three units of ``loopbus init`` each clear their lines of the multi-line list;
    any two combine, each removed entry's comment gone with it, the rest byte for byte."""
    base = scaffold.LOOPBUS_TOML.encode()
    blocks = {
        "ops": b'    # unit ops\n    "tests/test_criteria.py::test_add",\n'
        b'    "tests/test_criteria.py::test_mul",\n',
        "stats": b'    # unit stats\n    "tests/test_criteria.py::test_mean",\n',
        "fmt": b'    # unit fmt\n    "tests/test_criteria.py::test_format_total",\n',
    }
    for first, mine in blocks.items():
        for second, yours in blocks.items():
            if first == second:
                continue
            content, conflicts = merged(base, base.replace(mine, b""), base.replace(yours, b""))
            assert conflicts == [], (first, second)
            assert content == base.replace(mine, b"").replace(yours, b""), (first, second)


def test_different_keys_added_to_one_table_combine_and_keep_every_comment() -> None:
    """Two new keys in one table are both kept; every untouched byte (comments, spacing,
    a trailing comment) is what the file had."""
    ours = COMMENTED.replace(b'mode = "long"\n', b'mode = "long"\ntimeout = "20m"\n')
    theirs = COMMENTED.replace(b'roster = ["b1"]\n', b'roster = ["b1"]\nautonomy = ["safe"]\n')
    content, conflicts = merged(COMMENTED, ours, theirs)
    assert conflicts == []
    assert content == COMMENTED.replace(
        b'roster = ["b1"]\nmode = "long"\n',
        b'roster = ["b1"]\nautonomy = ["safe"]\nmode = "long"\ntimeout = "20m"\n',
    )


def test_different_keys_edited_in_one_table_combine() -> None:
    """One side edits ``command``, the other ``timeout`` (two adjacent lines): combined."""
    ours = COMMENTED.replace(b'command = "pytest -q"', b'command = "pytest -q -x"')
    theirs = COMMENTED.replace(b"timeout = 120 # seconds", b"timeout = 300 # seconds")
    content, conflicts = merged(COMMENTED, ours, theirs)
    assert conflicts == []
    assert content == ours.replace(b"timeout = 120 # seconds", b"timeout = 300 # seconds")


def test_the_same_key_set_to_two_values_is_a_conflict_named_after_it() -> None:
    """Both sides set ``[build] mode`` differently: a conflict naming the key, markers
    around that statement only, and its three versions as the hunk."""
    ours = COMMENTED.replace(b'mode = "long"', b'mode = "normal"')
    theirs = COMMENTED.replace(b'mode = "long"', b'mode = "fast"')
    result = merge_file(COMMENTED, ours, theirs, "loopbus.toml")
    assert [(c.kind, c.name, c.reason) for c in result.conflicts] == [
        ("key", "[build] mode", "both-modified")
    ]
    [hunk] = result.conflicts[0].hunks
    assert (hunk.base, hunk.ours, hunk.theirs) == (
        'mode = "long"\n',
        'mode = "normal"\n',
        'mode = "fast"\n',
    )
    assert result.content.endswith(
        b'roster = ["b1"]\n<<<<<<< ours (key [build] mode)\nmode = "normal"\n=======\n'
        b'mode = "fast"\n>>>>>>> theirs (key [build] mode)\n'
    )
    assert result.content.startswith(COMMENTED.split(b"[build]")[0])


def test_a_key_one_side_deleted_and_the_other_changed_is_a_conflict() -> None:
    """Deleting ``timeout`` against changing it: modify/delete, named after the key."""
    ours = COMMENTED.replace(b"timeout = 120 # seconds\n", b"")
    theirs = COMMENTED.replace(b"timeout = 120", b"timeout = 60")
    _content, conflicts = merged(COMMENTED, ours, theirs)
    assert conflicts == ["key [[check]] #1 timeout (delete-modify)"]


def test_one_element_replaced_differently_by_both_is_a_conflict() -> None:
    """Both sides replace the same element of one list with something else: conflict."""
    ours = ONE_LINE.replace(b'["a", "b"]', b'["x", "b"]')
    theirs = ONE_LINE.replace(b'["a", "b"]', b'["y", "b"]')
    content, conflicts = merged(ONE_LINE, ours, theirs)
    assert conflicts == ["key [[check]] #1 pending (both-modified)"]
    assert b'<<<<<<< ours (key [[check]] #1 pending)\npending = ["x", "b"]\n' in content


def test_a_multi_line_list_both_sides_changed_keeps_each_elements_comments() -> None:
    """Ours removes the pay entry (with its comments), theirs adds one at the end: the
    list is rewritten one element per line, each kept element with its own comments."""
    ours = COMMENTED.replace(b'    # unit pay\n    "tests/t.py::test_pay",  # the hard one\n', b"")
    theirs = COMMENTED.replace(
        b'    "tests/t.py::test_refund",\n',
        b'    "tests/t.py::test_refund",\n    "tests/t.py::test_ship",\n',
    )
    content, conflicts = merged(COMMENTED, ours, theirs)
    assert conflicts == []
    assert (
        b'pending = [\n    # unit cart\n    "tests/t.py::test_cart",\n'
        b'    "tests/t.py::test_refund",\n    "tests/t.py::test_ship",\n]\n' in content
    )


def test_a_file_that_is_not_toml_is_merged_by_lines() -> None:
    """A side that does not parse: a plain line merge, and the note says which side."""
    broken = ONE_LINE + b"this is = = not toml\n"
    result = merge_file(ONE_LINE, broken, ONE_LINE.replace(b'"shop"', b'"shop2"'), "x.toml")
    assert result.strategy == "line" and "ours does not parse as TOML" in result.note


def test_a_clean_line_merge_that_would_not_parse_is_refused() -> None:
    """A side that is not TOML (a table declared twice) whose lines merge cleanly with the
    other side's: the result would not parse, so it is the whole file as a conflict."""
    ours = ONE_LINE.replace(b'id = "shop"\n', b'id = "shop"\nowner = "a"\n')
    theirs = ONE_LINE + b"\n[project]\n"
    result = merge_file(ONE_LINE, ours, theirs, "loopbus.toml")
    assert [(c.kind, c.name, c.reason) for c in result.conflicts] == [
        ("file", "loopbus.toml", "result-unparseable")
    ]
    assert result.content.startswith(b"<<<<<<< ours (file loopbus.toml: does not parse)\n")


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(ONE_LINE, id="one-line-list"),
        pytest.param(COMMENTED, id="comments"),
        pytest.param(scaffold.LOOPBUS_TOML.encode(), id="scaffold"),
        pytest.param(
            b'a = 1\nb."x y".c = "s = t" # hi\n[t]\nd = [1, 2, [3, 4], {e = 5}]\n'
            b's = """\nmulti "" \\""" line\n"""\nl = \'\'\'raw\n\'\'\'\n'
            b"[[arr]]\nk = 1\n[[arr]]\nk = 2\n# tail\n",
            id="strings-inline-tables-arrays-of-tables",
        ),
        pytest.param(b"a = 1\r\n[t]\r\nb = [\r\n  1,\r\n]\r\n", id="crlf"),
        pytest.param(b'x = "no newline at the end"', id="no-final-newline"),
        pytest.param(b"", id="empty"),
    ],
)
def test_the_statement_model_gives_the_file_back_byte_for_byte(text: bytes) -> None:
    """Cutting a file into statements and joining them is the identity."""
    assert parse(text.decode()).text == text.decode()


def test_the_model_refuses_what_is_not_toml() -> None:
    """A text ``tomllib`` refuses is refused by the model too."""
    with pytest.raises(NotToml):
        parse("a = [1,\n")


ELEMENTS = st.lists(st.sampled_from("abcdefgh"), max_size=6, unique=True)


@settings(max_examples=300, deadline=None)
@given(base=ELEMENTS, ours=ELEMENTS, theirs=ELEMENTS, one_line=st.booleans())
def test_a_clean_merge_of_lists_always_parses_and_is_deterministic(
    base: list[str], ours: list[str], theirs: list[str], one_line: bool
) -> None:
    """Whatever three versions of one list: a clean result parses, holds what the data
    merge says, and merging again gives the same bytes."""

    def doc(items: list[str]) -> bytes:
        quoted = [f'"{i}"' for i in items]
        if one_line:
            return f"[t]\nk = 1\nl = [{', '.join(quoted)}]\n".encode()
        return ("[t]\nk = 1\nl = [\n" + "".join(f"  {q},\n" for q in quoted) + "]\n").encode()

    result = merge_file(doc(base), doc(ours), doc(theirs), "p.toml")
    again = merge_file(doc(base), doc(ours), doc(theirs), "p.toml")
    assert result.content == again.content
    if result.clean:
        value = tomllib.loads(result.content.decode())["t"]["l"]
        assert value == merge_list(base, ours, theirs)
    else:
        assert merge_list(base, ours, theirs) is None


def test_merge_list_keeps_both_sides_removals_and_additions() -> None:
    """The data merge of one array, case by case."""
    assert merge_list(["a", "b"], ["b"], ["a"]) == []
    assert merge_list(["a"], ["a", "x"], ["a", "y"]) == ["a", "x", "y"]
    assert merge_list(["a"], ["a", "x"], ["a", "x"]) == ["a", "x"]
    assert merge_list(["a", "b"], ["x", "b"], ["y", "b"]) is None
    assert merge_list(["a", "b"], ["x", "b"], ["b"]) == ["x", "b"]
    assert merge_list([1, 2], [1.0, 2], [1, 2, 3]) == [1.0, 2, 3]
