"""docs/units.md tells the truth about the table and the reasons the code enforces."""

from __future__ import annotations

import re
from pathlib import Path

from projections.transitions import ALLOWED
from schemas import BLOCK_REASONS
from schemas.reports import CAPACITY_BUDGETS

DOC = Path(__file__).resolve().parents[2] / "docs" / "units.md"


def _section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_the_documented_transition_table_is_the_one_in_code() -> None:
    """docs/units.md lists exactly the rows of the transition table in code."""
    rows = set()
    for line in _section("The transition table").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[2].startswith("`"):
            prior = None if cells[0] == "planned" else cells[0]
            rows.add((prior, cells[1], cells[2].strip("`")))
    assert rows == set(ALLOWED)


def test_the_documented_reasons_and_budgets_are_the_enforced_ones() -> None:
    """The reasons table names the closed set of reasons and every capacity budget."""
    section = _section("BLOCKED names its subject")
    assert re.findall(r"^\| `([a-z-]+)` \|", section, re.MULTILINE) == list(BLOCK_REASONS)
    for budget in CAPACITY_BUDGETS:
        assert f"`{budget}`" in section
