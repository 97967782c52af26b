"""docs/planning.md shows exactly the JSON Schema generated from the planner's brief."""

from __future__ import annotations

import json
import re
from pathlib import Path

from schemas.planning import plan_brief_schema

DOCS = Path(__file__).resolve().parents[2] / "docs" / "planning.md"


def test_the_docs_carry_the_generated_brief_schema() -> None:
    found = re.search(r"<!-- plan-brief-schema -->\n```json\n(.*?)\n```", DOCS.read_text(), re.S)
    assert found is not None, "docs/planning.md has no plan-brief schema block"
    assert json.loads(found[1]) == plan_brief_schema()
