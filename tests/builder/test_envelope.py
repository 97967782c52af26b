"""The brief and the envelope: decoding, one-line problems, and the schema in the docs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from schemas.builds import (
    BuildEnvelope,
    EnvelopeProblem,
    brief_schema,
    decode_envelope,
    envelope_schema,
    stated_class,
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
        pytest.param(
            answer(autonomy="harmless"),
            "$.novel_decisions[0].autonomy",
            '"harmless"',
            id="bad-class",
        ),
        pytest.param(
            json.dumps(
                {
                    "schema": "loopbus.envelope.v2",
                    "status": "completed",
                    "novel_decisions": [decision()],
                }
            ),
            "$.novel_decisions[0].autonomy",
            "null",
            id="v2-decision-without-class",
        ),
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


def test_a_v1_decision_without_a_class_counts_as_a_decision_class() -> None:
    """An envelope from before classes still decodes; its unstated class is never taken as
    a harmless one (``decision``: long mode does not pick it alone by default)."""
    envelope = decode_envelope(answer().encode())
    assert isinstance(envelope, BuildEnvelope) and envelope.schema == "loopbus.envelope.v1"
    [novel] = envelope.novel_decisions
    assert novel.autonomy is None and stated_class(novel) == "decision"


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
