"""The ``[merge]`` table of loopbus.toml: which checks run on trunk only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workers.errors import ConfigError
from workers.merger.config import parse_merge_config

DOC = Path(__file__).resolve().parents[2] / "docs" / "merger.md"

CHECKS = """\
[project]
id = "demo"

[[check]]
id = "tests"
command = "python -m pytest -q tests"
parser = "pytest"

[[check]]
id = "integration"
command = "python -m pytest -q integration"
parser = "pytest"
"""


def test_docs_example_declares_a_trunk_only_check() -> None:
    """The loopbus.toml example in docs/merger.md parses: integration is trunk-only."""
    [block] = [
        b
        for b in re.findall(r"^```toml\n(.*?)^```", DOC.read_text(), re.M | re.S)
        if b.startswith("# loopbus.toml")
    ]
    config = parse_merge_config(block)
    assert config.trunk_only == ("integration",)
    assert config.candidate_checks == ("tests",)


def test_without_a_merge_table_every_check_gates_candidates() -> None:
    """No [merge] table: nothing is trunk-only."""
    config = parse_merge_config(CHECKS)
    assert (config.project, config.trunk_only, config.candidate_checks) == (
        "demo",
        (),
        ("tests", "integration"),
    )


@pytest.mark.parametrize(
    ("table", "field", "hint"),
    [
        pytest.param('trunk_only = ["e2e"]', "merge.trunk_only", "no such check", id="unknown"),
        pytest.param('trunk_only = "tests"', "merge.trunk_only", "list check ids", id="not-list"),
        pytest.param("window = 3", "merge.window", "unknown key", id="unknown-key"),
        pytest.param(
            'trunk_only = ["tests", "integration"]',
            "merge.trunk_only",
            "at least one check must gate candidates",
            id="nothing-left-for-candidates",
        ),
    ],
)
def test_bad_merge_table_is_one_line_naming_field_and_fix(
    table: str, field: str, hint: str
) -> None:
    """A wrong [merge] table is refused with the field, the value and what to do."""
    with pytest.raises(ConfigError, match=re.escape(hint)) as caught:
        parse_merge_config(CHECKS + "\n[merge]\n" + table + "\n")
    assert caught.value.field == field
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(f"loopbus.toml: {field} = ")
