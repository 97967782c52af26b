"""opencode, headless: ``opencode run --format json``.

Format implemented (``opencode run`` in https://opencode.ai/docs/cli/, written by
packages/opencode/src/cli/cmd/run.ts): one object a line, each with ``type``,
``timestamp``, ``sessionID`` and a ``part``: ``step_start``, ``text`` (``part.text``, a
whole text part), ``tool_use`` (``part.tool``, ``part.state``), ``step_finish``
(``part.reason`` — ``tool-calls`` while the agent goes on —, ``part.tokens``: ``input``,
``output``, ``reasoning``, ``cache.read``, ``cache.write``) and ``error`` (``error``).
The final message is the text of the last step. Text piped on stdin is added to the
message, so the prompt goes there and the message only points at it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loopbus.agents_cli.extract import json_records
from loopbus.agents_cli.spec import Answer, Cli, Invocation, OutputError, Role, unless_given

POINTER = "Your task and how to answer follow; do what they say."


def invoke(prompt: str, role: Role, extra: Sequence[str]) -> Invocation:
    fmt = unless_given(extra, ("--format",), ["--format", "json"])
    return Invocation(argv=["opencode", "run", *fmt, *extra, POINTER], stdin=prompt)


def parse(stdout: str) -> Answer:
    step: list[str] = []
    last: list[str] | None = None
    tokens_in = tokens_out = 0
    for event in json_records(stdout):
        if not isinstance(event, dict):
            continue
        kind, part = event.get("type"), event.get("part") or {}
        if kind == "error":
            raise OutputError(f"reported an error: {_error(event.get('error'))[:200]}")
        if kind == "step_start":
            step = []
        elif kind == "text" and isinstance(part.get("text"), str):
            step.append(part["text"])
        elif kind == "step_finish":
            tokens = part.get("tokens") or {}
            cache = tokens.get("cache") or {}
            tokens_in += _count(tokens, "input") + _count(cache, "read") + _count(cache, "write")
            tokens_out += _count(tokens, "output") + _count(tokens, "reasoning")
            if step:
                last = step
    if last is None and step:
        last = step  # a run cut short after its text: still the last words
    if last is None:
        raise OutputError("printed no text part; is it `opencode run --format json`?")
    return Answer(text="".join(last), tokens_in=tokens_in, tokens_out=tokens_out)


def _error(error: Any) -> str:
    if isinstance(error, dict):
        data = error.get("data")
        if isinstance(data, dict) and "message" in data:
            return str(data["message"])
        return str(error.get("message", error.get("name", error)))
    return str(error)


def _count(values: Mapping[str, Any], key: str) -> int:
    value = values.get(key, 0)
    return value if isinstance(value, int) and value > 0 else 0


CLI = Cli(
    name="opencode",
    program="opencode",
    install="npm install -g opencode-ai",
    format_doc="https://opencode.ai/docs/cli/",
    invoke=invoke,
    parse=parse,
)
