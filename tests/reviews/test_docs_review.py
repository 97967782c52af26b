"""docs/review.md stays true: its schema is the one the code validates with, its examples
decode, and its configuration example is accepted by the reader of [review]."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest

from schemas.reviews import InvestigationReport, VerdictDocument
from workers.agents.config import parse
from workers.investigator.decide import parse_report
from workers.reviewer.verdicts import parse_verdict

DOC = Path(__file__).resolve().parents[2] / "docs" / "review.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(language: str) -> list[str]:
    return [m.group(2) for m in BLOCK.finditer(DOC.read_text()) if m.group(1) == language]


def documents() -> list[dict[str, Any]]:
    return [json.loads(b) for b in blocks("json")]


def the_schema() -> dict[str, Any]:
    (schema,) = [d for d in documents() if "$defs" in d]
    return schema


def test_the_documented_schema_is_the_one_the_code_uses() -> None:
    """The JSON schema in the docs equals msgspec's schema of VerdictDocument (regenerate
    the block with the command shown above it when this fails)."""
    generated = msgspec.json.schema(VerdictDocument)
    documented = the_schema()
    generated_defs = {k: v for k, v in generated["$defs"].items() if k in documented["$defs"]}
    assert documented["$ref"] == generated["$ref"]
    assert documented["$defs"] == generated_defs


def verdict_examples() -> list[Any]:
    return [
        pytest.param(d, id=d["verdict"]) for d in documents() if "verdict" in d and "$defs" not in d
    ]


@pytest.mark.parametrize("example", verdict_examples())
def test_verdict_examples_are_valid_verdicts(example: dict[str, Any]) -> None:
    """Each verdict example validates against the schema and is accepted by the adapter."""
    schema = msgspec.json.schema(VerdictDocument)
    jsonschema.validate(example, schema)
    parsed = parse_verdict(json.dumps(example).encode(), "medium")
    assert isinstance(parsed, VerdictDocument), parsed


def test_the_input_example_has_exactly_the_five_keys() -> None:
    """What the reviewer is given: diff, gate_results, criteria, the auto-picked decisions,
    the lessons in force, and nothing else."""
    (given,) = [d for d in documents() if "diff" in d]
    assert sorted(given) == ["criteria", "decisions", "diff", "gate_results", "lessons"]


def test_the_investigation_report_example_decodes() -> None:
    """Every documented investigator answer (with and without a proposed gate) is an
    InvestigationReport."""
    reports = [d for d in documents() if "summary" in d and "verdict" not in d]
    assert len(reports) >= 2 and any("gate" in r for r in reports)
    for report in reports:
        assert isinstance(parse_report(json.dumps(report).encode()), InvestigationReport)


def test_the_configuration_example_is_accepted() -> None:
    """The loopbus.toml example parses, and its [review]/[investigator] tables validate."""
    (text,) = [b for b in blocks("toml") if "[review]" in b]
    config = parse(text)
    assert config.review.roster == ("r1", "r2", "r3")
    assert (config.review.timeout_s, config.investigator.timeout_s) == (300.0, 600.0)
    assert tomllib.loads(text)["review"]["subtraction"] == config.review.subtraction
