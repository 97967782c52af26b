"""The brief and the envelope: decoding, one-line problems, and the schema in the docs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from loopbus.schemas.builds import (
    BuildEnvelope,
    EnvelopeProblem,
    brief_schema,
    decode_envelope,
    envelope_schema,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


def options() -> list[dict[str, str]]:
    return [{"id": "a"}, {"id": "b"}]


def answer(**over: object) -> str:
    return json.dumps({"status": "completed", "novel_decisions": [decision(**over)]})


def decision(**over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "decision_id": "d1",
        "question": "q?",
        "options": options(),
        "recommended_default": "a",
        "confidence": "med",
    }
    return base | over


@pytest.mark.parametrize(
    ("stdout", "field", "value"),
    [
        pytest.param(b"", "$", "''", id="empty"),
        pytest.param(b"{", "$", "'{'", id="not-json"),
        pytest.param(b'{"status": "done"}', "$.status", '"done"', id="bad-status"),
        pytest.param(b'{"summary": "x"}', "$", '{"summary":"x"}', id="no-status"),
        pytest.param(
            answer(confidence="sure"),
            "$.novel_decisions[0].confidence",
            '"sure"',
            id="bad-confidence",
        ),
        pytest.param(
            answer(recommended_default="z"),
            "$.novel_decisions[0].recommended_default",
            '"z"',
            id="default-not-an-option",
        ),
        pytest.param(
            answer(options=[{"id": "a"}]),
            "$.novel_decisions[0].options",
            '[{"id":"a"}]',
            id="one-option",
        ),
        pytest.param(b'{"status": "completed", "tokens": -1}', "$.tokens", "-1", id="negative"),
    ],
)
def test_a_malformed_envelope_names_the_field_and_value(
    stdout: bytes | str, field: str, value: str
) -> None:
    """Every malformed answer becomes one line naming the field and the value found."""
    problem = decode_envelope(stdout.encode() if isinstance(stdout, str) else stdout)
    assert isinstance(problem, EnvelopeProblem)
    assert (problem.field, problem.value) == (field, value)
    assert "\n" not in problem.line()


def test_an_envelope_may_follow_log_lines() -> None:
    """A command that logs on stdout before its answer still answers: the last line counts."""
    envelope = decode_envelope(b'working...\n{"status": "partial", "summary": "half"}\n')
    assert isinstance(envelope, BuildEnvelope) and envelope.status == "partial"


@pytest.mark.parametrize(
    ("title", "schema"),
    [("brief", brief_schema), ("envelope", envelope_schema)],
    ids=["brief", "envelope"],
)
def test_the_docs_carry_the_generated_schema(title: str, schema: object) -> None:
    """docs/agents.md shows exactly the JSON Schema generated from the Struct."""
    text = DOCS.read_text()
    found = re.search(rf"<!-- {title}-schema -->\n```json\n(.*?)\n```", text, re.S)
    assert found is not None, f"docs/agents.md has no {title} schema block"
    assert json.loads(found[1]) == schema()  # type: ignore[operator]
