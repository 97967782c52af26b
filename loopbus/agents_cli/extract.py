"""JSON out of text: the envelope in an agent's final message, and the records a CLI printed.

An agent asked to end with a JSON object may wrap it in a Markdown fence (```json … ```),
put it bare at the end, or say a sentence around it. The envelope is the last fenced
block that holds a JSON object, else the last complete JSON object in the text (the
outermost one, so a nested object is never taken for the whole).
"""

from __future__ import annotations

import json
import re
from typing import Any

FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)\n[ \t]*```", re.DOTALL)

_decoder = json.JSONDecoder()


def find_object(text: str) -> dict[str, Any] | None:
    """The envelope object in ``text``, or ``None`` when it holds none."""
    for block in reversed(FENCE.findall(text)):
        value = _whole(block)
        if isinstance(value, dict):
            return value
    value = _whole(text)
    if isinstance(value, dict):
        return value
    return _last_bare(text)


def _whole(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _last_bare(text: str) -> dict[str, Any] | None:
    # Every '{' may open an object; of those that decode, the one ending last wins, and of
    # those ending there the one starting first (the outermost).
    best: tuple[int, int, dict[str, Any]] | None = None
    start = text.find("{")
    while start != -1:
        try:
            value, end = _decoder.raw_decode(text, start)
        except ValueError:
            value, end = None, -1
        if isinstance(value, dict) and (best is None or end > best[1]):
            best = (start, end, value)
        # Inside an object already found, no later '{' can end after it: skip past it.
        start = text.find("{", end if end > start else start + 1)
    return best[2] if best else None


def json_records(stdout: str) -> list[Any]:
    """What a CLI printed as JSON: the whole output when it is one JSON document (an object,
    or an array of messages), else every line that is one (JSON Lines; other lines, such as
    a banner, are skipped)."""
    whole = _whole(stdout)
    if isinstance(whole, list):
        return whole
    if whole is not None:
        return [whole]
    records = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith(("{", "[")):
            value = _whole(line)
            if value is not None:
                records.append(value)
    return records
