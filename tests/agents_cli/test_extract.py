"""The envelope in an agent's final message: fenced or bare, the last one, never a part."""

from __future__ import annotations

import pytest

from loopbus.agents_cli.extract import find_object, json_records


@pytest.mark.parametrize(
    ("text", "found"),
    [
        pytest.param('{"status": "completed"}', {"status": "completed"}, id="bare-whole"),
        pytest.param(
            'Done.\n```json\n{"status": "partial"}\n```\n', {"status": "partial"}, id="fenced"
        ),
        pytest.param(
            '```json\n{"a": 1}\n```\nthen\n```json\n{"b": 2}\n```', {"b": 2}, id="last-fence"
        ),
        pytest.param('```\n{"c": 3}\n```', {"c": 3}, id="fence-without-language"),
        pytest.param(
            'Answer:\n```json\n{"status": "completed"}\n```\nI left {"note": 1} aside.',
            {"status": "completed"},
            id="a-fence-beats-a-later-bare-object",
        ),
        pytest.param(
            'I read {"x": 1} and decided.\n{"status": "failed", "why": {"k": "v"}}\nBye.',
            {"status": "failed", "why": {"k": "v"}},
            id="last-bare-outermost",
        ),
        pytest.param('```json\n{"broken": \n```\n{"ok": true}', {"ok": True}, id="bad-fence"),
        pytest.param("No JSON here.", None, id="none"),
        pytest.param("[1, 2]", None, id="array-is-no-envelope"),
        pytest.param('{"unclosed": 1', None, id="unclosed"),
    ],
)
def test_find_object(text: str, found: object) -> None:
    """The last fenced object wins, else the last complete bare object, outermost."""
    assert find_object(text) == found


def test_json_records_reads_one_document_or_json_lines() -> None:
    """One document (an object, or an array of messages) is read whole; otherwise each line
    that is JSON is a record and a banner line is skipped."""
    assert json_records('{\n  "a": 1\n}') == [{"a": 1}]
    assert json_records('[{"a": 1}, {"b": 2}]') == [{"a": 1}, {"b": 2}]
    assert json_records('banner\n{"a": 1}\n{"b": 2}\n') == [{"a": 1}, {"b": 2}]
