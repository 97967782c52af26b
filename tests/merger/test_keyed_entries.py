"""Both sides adding entries at one place of a keyed literal (workers/entity_merge/entries.py).

A dictionary, an object literal, a Go composite literal and a Rust struct expression
keep both sides' new keys, ours first. What only looks like such an entry (a
parameter `x: int,` of a signature, a type literal's member) stays a conflict, and so
does a key both sides add, or a literal the merge would give one key twice.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workers.entity_merge import merge_file
from workers.entity_merge.entries import entry_key, merge_entries


def _merge(path: str, base: str, ours: str, theirs: str) -> tuple[bool, str, str]:
    result = merge_file(base.encode(), ours.encode(), theirs.encode(), path)
    return result.clean, result.content.decode(), result.note


LITERALS = [
    pytest.param(
        "settings.py",
        "X = {{\n    'a': 1,\n{}    'z': 9,\n}}\n",
        ("    'b': 2,\n", "    'c': 3,\n"),
        id="python dictionary",
    ),
    pytest.param(
        "locale.ts",
        "export default {{\n  show: 'Show',\n{}  hide: 'Hide',\n}};\n",
        ("  clear: 'Clear',\n", "  sortable: 'sortable',\n"),
        id="typescript object (ant-design's locales)",
    ),
    pytest.param(
        "config.mjs",
        'export default {{\n  rules: {{\n    "a": "error",\n{}    "z": "off",\n  }},\n}};\n',
        ('    "b-rule": "error",\n', '    "c-rule": "warn",\n'),
        id="javascript object with quoted keys (typeorm's eslint config)",
    ),
    pytest.param(
        "main.go",
        "package p\n\nvar x = T{{\n\tA: 1,\n{}\tZ: 9,\n}}\n",
        ("\tB: 2,\n", "\tC: 3,\n"),
        id="go composite literal",
    ),
    pytest.param(
        "lib.rs",
        "fn f() -> T {{\n    T {{\n        a: 1,\n{}        z: 9,\n    }}\n}}\n",
        ("        b: 2,\n", "        c: 3,\n"),
        id="rust struct expression",
    ),
]


@pytest.mark.parametrize(("path", "template", "added"), LITERALS)
def test_two_new_keys_at_one_place_are_both_kept_ours_first(
    path: str, template: str, added: tuple[str, str]
) -> None:
    ours_line, theirs_line = added
    clean, content, _ = _merge(
        path, template.format(""), template.format(ours_line), template.format(theirs_line)
    )
    assert clean
    assert content == template.format(ours_line + theirs_line)


@pytest.mark.parametrize(("path", "template", "added"), LITERALS)
def test_one_key_added_by_both_sides_with_different_values_clashes(
    path: str, template: str, added: tuple[str, str]
) -> None:
    ours_line, _ = added
    theirs_line = ours_line.replace("2", "7").replace("'Clear'", "'Empty'")
    theirs_line = theirs_line.replace('"error"', '"off"')
    assert theirs_line != ours_line
    clean, _, _ = _merge(
        path, template.format(""), template.format(ours_line), template.format(theirs_line)
    )
    assert not clean


def test_a_key_the_other_side_added_elsewhere_in_the_literal_is_not_given_twice() -> None:
    """Theirs put `b` at the top and `c` in the middle; ours put `b` in the middle."""
    base = "X = {\n    'a': 1,\n    'z': 9,\n}\n"
    ours = "X = {\n    'a': 1,\n    'b': 2,\n    'z': 9,\n}\n"
    theirs = "X = {\n    'b': 5,\n    'a': 1,\n    'c': 3,\n    'z': 9,\n}\n"
    clean, _, note = _merge("settings.py", base, ours, theirs)
    assert not clean
    assert "one key twice" in note


@pytest.mark.parametrize(
    ("path", "base", "ours", "theirs"),
    [
        pytest.param(
            "api.py",
            "def f(\n    a: int,\n    z: int,\n):\n    pass\n",
            "def f(\n    a: int,\n    b: int,\n    z: int,\n):\n    pass\n",
            "def f(\n    a: int,\n    c: int,\n    z: int,\n):\n    pass\n",
            id="python parameters: their order is the call's",
        ),
        pytest.param(
            "api.ts",
            "function f(\n  a: number,\n  z: number,\n) {}\n",
            "function f(\n  a: number,\n  b: number,\n  z: number,\n) {}\n",
            "function f(\n  a: number,\n  c: number,\n  z: number,\n) {}\n",
            id="typescript parameters",
        ),
        pytest.param(
            "api.ts",
            "type T = {\n  a: number,\n  z: number,\n};\n",
            "type T = {\n  a: number,\n  b: number,\n  z: number,\n};\n",
            "type T = {\n  a: number,\n  c: number,\n  z: number,\n};\n",
            id="typescript type literal members",
        ),
    ],
)
def test_lines_that_only_look_like_entries_stay_a_conflict(
    path: str, base: str, ours: str, theirs: str
) -> None:
    clean, _, note = _merge(path, base, ours, theirs)
    assert not clean
    assert "outside a literal of keys" in note


def test_an_entry_whose_value_goes_on_past_its_line_is_not_one() -> None:
    assert entry_key(b"    'a': call(x,\n") is None
    assert entry_key(b"    'a': call(x),\n") == b"a"
    assert entry_key(b'    "a-b": 1,\n') == b"a-b"
    assert entry_key(b"    a: 1, // why\n") is None
    assert entry_key(b"    default:\n") is None


def test_only_pure_insertions_on_both_sides_are_joined() -> None:
    entry_b, entry_c = [b"    'b': 2,\n"], [b"    'c': 3,\n"]
    assert merge_entries([], entry_b, entry_c) == entry_b + entry_c
    # A side that changed a base line did more than add a key.
    assert merge_entries([b"    'a': 1,\n"], entry_b, entry_c) is None
    assert merge_entries([], entry_b, []) is None
    # One side adding one key twice is its own business, not a merge's to repeat.
    assert merge_entries([], entry_b + entry_b, entry_c) is None


@pytest.mark.parametrize(
    ("path", "base", "ours", "theirs"),
    [
        pytest.param(
            "o.js",
            "const a = 5;\nexport const o = {\n  x: 0,\n  z: 9,\n};\n",
            "const a = 5;\nexport const o = {\n  x: 0,\n  a: 1,\n  z: 9,\n};\n",
            "const a = 5;\nexport const o = {\n  a,\n  x: 0,\n  c: 3,\n  z: 9,\n};\n",
            id="a shorthand property is a key too",
        ),
        pytest.param(
            "o.js",
            "export const o = {\n  x: 0,\n  z: 9,\n};\n",
            "export const o = {\n  x: 0,\n  b: 1,\n  z: 9,\n};\n",
            "export const o = {\n  ['b']: 5,\n  x: 0,\n  c: 3,\n  z: 9,\n};\n",
            id="a computed key may be any key",
        ),
        pytest.param(
            "d.py",
            "D = {\n    'a': 1,\n    'z': 9,\n}\n",
            "D = {\n    'a': 1,\n    'b': 2,\n    'z': 9,\n}\n",
            "D = {\n    u'b': 5,\n    'a': 1,\n    'c': 3,\n    'z': 9,\n}\n",
            id="python's u'b' is 'b'",
        ),
        pytest.param(
            "d.py",
            "A = B = 'k'\nD = {\n    'a': 1,\n    'z': 9,\n}\n",
            "A = B = 'k'\nD = {\n    'a': 1,\n    A: 2,\n    'z': 9,\n}\n",
            "A = B = 'k'\nD = {\n    'a': 1,\n    B: 3,\n    'z': 9,\n}\n",
            id="a bare name in a python dictionary is a variable",
        ),
        pytest.param(
            "d.py",
            "D = {\n    'a': 1,\n    'z': 9,\n}\n",
            "D = {\n    'a': 1,\n    'b': 2, **extra,\n    'z': 9,\n}\n",
            "D = {\n    'a': 1,\n    'c': 3,\n    'z': 9,\n}\n",
            id="a line holding an entry and a splat is not one entry",
        ),
        pytest.param(
            "p.go",
            "package p\n\nconst (\n\tFive = 5\n\tNine = 9\n)\n\n"
            'var names = [...]string{\n\t"zero",\n\t"last",\n}\n',
            "package p\n\nconst (\n\tFive = 5\n\tNine = 9\n)\n\n"
            'var names = [...]string{\n\t"zero",\n\tFive: "five",\n\t"last",\n}\n',
            "package p\n\nconst (\n\tFive = 5\n\tNine = 9\n)\n\n"
            'var names = [...]string{\n\t"zero",\n\tNine: "nine",\n\t"last",\n}\n',
            id="a go array's index keys place the elements after them",
        ),
    ],
)
def test_a_literal_whose_keys_are_not_all_written_out_keeps_the_clash(
    path: str, base: str, ours: str, theirs: str
) -> None:
    """An independent review's wrong merges: each set a key the entries did not show."""
    clean, _, _ = _merge(path, base, ours, theirs)
    assert not clean


def test_the_reason_names_the_same_joined_line_whatever_the_hash_seed() -> None:
    """Of several joined lines outside any keyed literal, the first given is named.

    It was the first of a set of bytes, whose order moves with PYTHONHASHSEED: the same
    merge gave a different conflict note from one run to the next (webpack's
    ``test/Defaults.unittest.js`` in the corpus). Each seed runs in its own interpreter.
    """
    script = (
        "from workers.entity_merge.entries import misplaced_entries\n"
        "from workers.entity_merge.languages import language_for_path\n"
        "spec = language_for_path('a.js')\n"
        "content = b'f(1);\\ng(2);\\nh(3);\\nk(4);\\n'\n"
        "root = spec.parser().parse(content).root_node\n"
        "joined = (b'h(3);\\n', b'f(1);\\n', b'k(4);\\n', b'g(2);\\n')\n"
        "print(misplaced_entries(spec, root, content, joined))\n"
    )
    root = Path(__file__).resolve().parents[2]
    reasons = set()
    for seed in range(6):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        run = subprocess.run(
            [sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
        reasons.add(run.stdout.strip())
    assert reasons == {"joins 'h(3);' from both sides outside a literal of keys"}
