"""JSON and YAML merged by key and element: layout and comments kept, collisions conflict.

YAML results are also read back with PyYAML, a parser independent of the tree-sitter grammar
the merge reads YAML with, so "means the merge of both sides" is not the merge grading itself.
"""

from __future__ import annotations

import json
import tomllib

import pytest
import yaml

from workers.entity_merge import MergeResult, merge_file
from workers.entity_merge.data_merge import data_merger_for


def merge(path: str, base: str, ours: str, theirs: str) -> MergeResult:
    return merge_file(base.encode(), ours.encode(), theirs.encode(), path)


def labels(result: MergeResult) -> list[str]:
    return [c.label for c in result.conflicts]


# -- JSON --------------------------------------------------------------------------------

PACKAGE = """\
{
    "name": "shop",
    "scripts": {
        "test": "pytest"
    },
    "files": ["a.py", "b.py"],
    "steps": [
        {"id": "lint", "run": "ruff"},
        {"id": "test", "run": "pytest"}
    ]
}
"""


def test_json_keys_added_on_both_sides_and_a_new_object_combine_in_the_files_layout() -> None:
    ours = PACKAGE.replace('"test": "pytest"', '"test": "pytest",\n        "lint": "ruff"')
    theirs = PACKAGE.replace(
        '"name": "shop",', '"name": "shop",\n    "engines": {\n        "python": ">=3.11"\n    },'
    )
    result = merge("package.json", PACKAGE, ours, theirs)
    assert result.clean and result.strategy == "entity", result.note
    assert result.content.decode() == PACKAGE.replace(
        '"name": "shop",', '"name": "shop",\n    "engines": {\n        "python": ">=3.11"\n    },'
    ).replace('"test": "pytest"', '"test": "pytest",\n        "lint": "ruff"')
    # A line merge conflicts here: both sides added lines right after "name".
    theirs_at_same_place = PACKAGE.replace(
        '"name": "shop",', '"name": "shop",\n    "private": true,'
    )
    ours_at_same_place = PACKAGE.replace(
        '"name": "shop",', '"name": "shop",\n    "license": "MIT",'
    )
    both = merge("package.json", PACKAGE, ours_at_same_place, theirs_at_same_place)
    assert both.clean, both.note
    assert json.loads(both.content) == {
        **json.loads(PACKAGE),
        "license": "MIT",
        "private": True,
    }
    assert list(json.loads(both.content)) == [
        "name",
        "license",
        "private",
        "scripts",
        "files",
        "steps",
    ]


def test_json_array_elements_added_and_removed_on_each_side_combine() -> None:
    ours = PACKAGE.replace('["a.py", "b.py"]', '["a.py", "b.py", "c.py"]')
    theirs = PACKAGE.replace('["a.py", "b.py"]', '["b.py", "d.py"]')
    result = merge("package.json", PACKAGE, ours, theirs)
    assert result.clean, result.note
    assert result.content.decode() == PACKAGE.replace(
        '["a.py", "b.py"]', '["b.py", "c.py", "d.py"]'
    )


def test_json_records_in_a_list_edited_on_different_keys_combine_by_position() -> None:
    ours = PACKAGE.replace('"run": "ruff"', '"run": "ruff check"')
    theirs = PACKAGE.replace(
        '{"id": "test", "run": "pytest"}', '{"id": "test", "run": "pytest", "timeout": 60}'
    )
    result = merge("package.json", PACKAGE, ours, theirs)
    assert result.clean, result.note
    steps = json.loads(result.content)["steps"]
    assert steps == [
        {"id": "lint", "run": "ruff check"},
        {"id": "test", "run": "pytest", "timeout": 60},
    ]


def test_json_the_same_key_set_two_ways_is_a_conflict_named_after_it() -> None:
    ours = PACKAGE.replace('"test": "pytest"', '"test": "pytest -q"')
    theirs = PACKAGE.replace('"test": "pytest"', '"test": "pytest -x"')
    result = merge("package.json", PACKAGE, ours, theirs)
    assert not result.clean
    assert labels(result) == ["key scripts.test"]
    assert (
        b'<<<<<<< ours (key scripts.test)\n        "test": "pytest -q"\n=======\n' in result.content
    )


def test_json_a_key_deleted_on_one_side_and_changed_on_the_other_is_a_conflict() -> None:
    ours = PACKAGE.replace('    "files": ["a.py", "b.py"],\n', "")
    theirs = PACKAGE.replace('["a.py", "b.py"]', '["a.py"]')
    result = merge("package.json", PACKAGE, ours, theirs)
    assert [(c.label, c.reason) for c in result.conflicts] == [("key files", "delete-modify")]
    flipped = merge("package.json", PACKAGE, theirs, ours)
    assert [(c.label, c.reason) for c in flipped.conflicts] == [("key files", "modify-delete")]


def test_json_nested_deeper_than_the_key_merge_follows_is_merged_by_lines() -> None:
    """A forged file nested thousands deep makes the readers recurse past Python's limit:
    a line merge that says so, not a traceback from the driver."""
    deep = "[" * 5000 + "]" * 5000
    base = '{"a": 1, "d": ' + deep + "}\n"
    result = merge("x.json", base, base.replace('"a": 1', '"a": 2'), base.replace('"d"', '"e"'))
    assert result.strategy == "line"
    assert result.note.startswith("nests deeper than the key merge follows")


def test_json_one_key_added_twice_in_different_places_is_a_conflict_not_a_duplicate() -> None:
    """The lines merge cleanly (the additions are far apart) into an object that names
    "version" twice, which json would read as the last one: a silent pick. Refused whole."""
    ours = PACKAGE.replace('"name": "shop",', '"name": "shop",\n    "version": "1",')
    theirs = PACKAGE.replace("    ]\n}", '    ],\n    "version": "2"\n}')
    result = merge("package.json", PACKAGE, ours, theirs)
    assert not result.clean
    assert result.note == "keys collide: version"
    assert result.content.startswith(b"<<<<<<< ours (file package.json: keys collide: version)\n")


def test_json_an_element_replaced_differently_on_both_sides_is_a_conflict() -> None:
    ours = PACKAGE.replace('["a.py", "b.py"]', '["a2.py", "b.py"]')
    theirs = PACKAGE.replace('["a.py", "b.py"]', '["a3.py", "b.py"]')
    assert not merge("package.json", PACKAGE, ours, theirs).clean


@pytest.mark.parametrize(
    ("side", "text", "why"),
    [
        pytest.param("ours", '{\n  // a comment\n  "a": 1\n}\n', "does not parse", id="jsonc"),
        pytest.param("theirs", '{"a": 1, "a": 2}\n', "repeats the key 'a'", id="repeated-key"),
        pytest.param("theirs", '{"a": NaN}\n', "holds NaN, which is not JSON", id="nan"),
    ],
)
def test_json_a_side_the_key_merge_cannot_read_is_merged_by_lines_saying_why(
    side: str, text: str, why: str
) -> None:
    base = '{\n  "a": 1\n}\n'
    edited = '{\n  "a": 1,\n  "b": 2\n}\n'  # the other side changed something too
    ours, theirs = (text, edited) if side == "ours" else (edited, text)
    result = merge("tsconfig.json", base, ours, theirs)
    assert result.strategy == "line"
    assert result.note.startswith(f"{side} ") and why in result.note
    assert result.note.endswith("as JSON; merged by lines")


# -- YAML --------------------------------------------------------------------------------

WORKFLOW = """\
# CI for the shop
name: ci
on:
  push:
    branches: [main]
env:
  PYTHON: "3.11"  # the floor we support
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      # check the code out first
      - uses: actions/checkout@v4
      - name: test
        run: pytest -q
# end of workflow
"""


def test_yaml_keys_added_in_one_mapping_on_both_sides_combine_and_keep_every_comment() -> None:
    ours = WORKFLOW.replace(
        '  PYTHON: "3.11"  # the floor we support\n',
        '  PYTHON: "3.11"  # the floor we support\n  CI: "1"\n',
    )
    theirs = WORKFLOW.replace("env:\n", 'env:\n  # colour in logs\n  FORCE_COLOR: "1"\n')
    result = merge("ci.yml", WORKFLOW, ours, theirs)
    assert result.clean and result.strategy == "entity", result.note
    text = result.content.decode()
    assert text == WORKFLOW.replace(
        "env:\n", 'env:\n  # colour in logs\n  FORCE_COLOR: "1"\n'
    ).replace(
        '  PYTHON: "3.11"  # the floor we support\n',
        '  PYTHON: "3.11"  # the floor we support\n  CI: "1"\n',
    )
    assert yaml.safe_load(text)["env"] == {"FORCE_COLOR": "1", "PYTHON": "3.11", "CI": "1"}


def test_yaml_a_new_mapping_and_a_new_key_elsewhere_combine() -> None:
    ours = WORKFLOW.replace("jobs:\n", "permissions:\n  contents: read\njobs:\n")
    theirs = WORKFLOW.replace(
        "    runs-on: ubuntu-latest\n", "    runs-on: ubuntu-latest\n    timeout-minutes: 10\n"
    )
    result = merge("ci.yaml", WORKFLOW, ours, theirs)
    assert result.clean, result.note
    loaded = yaml.safe_load(result.content)
    assert loaded["permissions"] == {"contents": "read"}
    assert loaded["jobs"]["test"]["timeout-minutes"] == 10
    assert result.content.decode().splitlines()[0] == "# CI for the shop"
    assert result.content.decode().endswith("        run: pytest -q\n# end of workflow\n")


def test_yaml_list_elements_added_on_both_sides_are_all_kept() -> None:
    base = "targets:\n  - linux\n  - mac\n"
    result = merge("build.yaml", base, base + "  - windows\n", base + "  - bsd\n")
    assert result.clean, result.note
    assert result.content == b"targets:\n  - linux\n  - mac\n  - windows\n  - bsd\n"


def test_yaml_steps_edited_on_different_keys_combine_by_position() -> None:
    ours = WORKFLOW.replace("run: pytest -q", "run: pytest -q -x")
    theirs = WORKFLOW.replace(
        "      - uses: actions/checkout@v4\n",
        "      - uses: actions/checkout@v4\n        with:\n          fetch-depth: 0\n",
    )
    result = merge("ci.yml", WORKFLOW, ours, theirs)
    assert result.clean, result.note
    steps = yaml.safe_load(result.content)["jobs"]["test"]["steps"]
    assert steps == [
        {"uses": "actions/checkout@v4", "with": {"fetch-depth": 0}},
        {"name": "test", "run": "pytest -q -x"},
    ]
    assert "      # check the code out first\n" in result.content.decode()


def test_yaml_the_same_key_set_two_ways_is_a_conflict_named_after_it() -> None:
    ours = WORKFLOW.replace("runs-on: ubuntu-latest", "runs-on: ubuntu-22.04")
    theirs = WORKFLOW.replace("runs-on: ubuntu-latest", "runs-on: ubuntu-24.04")
    result = merge("ci.yml", WORKFLOW, ours, theirs)
    assert labels(result) == ["key jobs.test.runs-on"]
    assert b"    runs-on: ubuntu-22.04\n=======\n    runs-on: ubuntu-24.04\n" in result.content


def test_yaml_a_key_deleted_on_one_side_and_changed_on_the_other_is_a_conflict() -> None:
    ours = WORKFLOW.replace('  PYTHON: "3.11"  # the floor we support\n', '  PYTHON: "3.12"\n')
    theirs = WORKFLOW.replace('env:\n  PYTHON: "3.11"  # the floor we support\n', "")
    result = merge("ci.yml", WORKFLOW, ours, theirs)
    assert not result.clean
    assert labels(result) == ["key env"]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        pytest.param("a: &x 1\nb: *x\n", "uses an anchor at line 1", id="anchor"),
        pytest.param("a: !!str 1\n", "uses a tag", id="tag"),
        pytest.param("a: 1\n---\nb: 2\n", "holds 2 documents", id="two-documents"),
        pytest.param("a: 1\na: 2\n", "writes the key 'a' twice", id="repeated-key"),
        pytest.param("a: [1\n", "does not parse", id="broken"),
    ],
)
def test_yaml_what_the_model_would_misread_is_merged_by_lines_saying_why(
    text: str, why: str
) -> None:
    base = "a: 1\n"
    result = merge("x.yaml", base, text, base)
    assert result.content == text.encode()  # only ours changed: the line merge takes it
    result = merge("x.yaml", base, text, "a: 1\nc: 3\n")
    assert result.strategy == "line"
    assert result.note.startswith("ours ") and why in result.note, result.note


# -- dispatch and TOML -------------------------------------------------------------------


def test_each_configuration_extension_has_its_key_merge_and_others_do_not() -> None:
    for path in ("a.toml", "a.json", "A.JSON", "a.yaml", "a.yml"):
        assert data_merger_for(path) is not None, path
    for path in ("a.py", "a.jsonc", "a.txt", "Makefile"):
        assert data_merger_for(path) is None, path


def test_toml_keys_added_to_nested_tables_on_both_sides_combine() -> None:
    base = '[tool.ruff]\nline-length = 100\n\n[tool.ruff.lint]\nselect = ["E"]\n'
    ours = base.replace('select = ["E"]', 'select = ["E", "F"]')
    theirs = base.replace("line-length = 100\n", 'line-length = 100\ntarget-version = "py311"\n')
    result = merge("pyproject.toml", base, ours, theirs)
    assert result.clean, result.note
    assert tomllib.loads(result.content.decode()) == {
        "tool": {
            "ruff": {"line-length": 100, "target-version": "py311", "lint": {"select": ["E", "F"]}}
        }
    }


def test_yaml_block_scalars_added_on_both_sides_combine_whatever_ends_the_file() -> None:
    """The grammar ends a block scalar after its newline at the end of a file and before it
    elsewhere; the same text must still mean the same value wherever it lands."""
    base = "a: 1\n"
    ours = base + "b: |\n  text\n  more\n"
    theirs = base + "c: >\n  folded\n"
    result = merge("x.yaml", base, ours, theirs)
    assert result.clean, result.note
    assert result.content == b"a: 1\nb: |\n  text\n  more\nc: >\n  folded\n"
    assert yaml.safe_load(result.content) == {"a": 1, "b": "text\nmore\n", "c": "folded\n"}


def test_yaml_without_a_final_newline_gets_one_between_members() -> None:
    result = merge("x.yaml", "a: 1\nb: 2", "a: 1\nb: 2\nc: 3", "a: 1\nb: 2\nd: 4")
    assert result.clean, result.note
    assert result.content == b"a: 1\nb: 2\nc: 3\nd: 4"


def test_yaml_past_the_grammars_line_limit_is_merged_by_lines_saying_why() -> None:
    """tree-sitter-yaml reports an error from the first line of a file of more than 32,768
    lines (docs/merge-driver.md says so): such a file must reach the line merge, not be
    taken for a broken one silently."""
    base = "".join(f"k{i}: v\n" for i in range(32_800))
    result = merge("big.yaml", base, "a: 1\n" + base, base + "z: 2\n")
    assert result.strategy == "line"
    assert result.note == "base does not parse as YAML; merged by lines"
    assert result.clean and result.content.decode() == "a: 1\n" + base + "z: 2\n"
