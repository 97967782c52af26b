"""Claude Code, headless: ``claude -p --output-format json`` (or ``stream-json``).

Format implemented (https://docs.claude.com/en/docs/claude-code/headless, "Output
formats"): ``json`` prints one object when the run ends, ``stream-json`` (with
``--verbose``) one object a line — a ``system`` ``init``, then ``assistant`` and ``user``
messages (tool uses and their results), and last the same ``result`` object. That object
has ``type: "result"``, ``subtype`` (``success`` or an error kind), ``is_error``,
``result`` (the final message) and ``usage`` (``input_tokens``, ``output_tokens``,
``cache_creation_input_tokens``, ``cache_read_input_tokens``). With ``-p`` and no prompt
argument the prompt is read from stdin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loopbus.agents_cli.extract import json_records
from loopbus.agents_cli.spec import (
    EDITS,
    Answer,
    Cli,
    Invocation,
    OutputError,
    Role,
    unless_given,
)

BUILD_MODE = ["--permission-mode", "bypassPermissions"]
"""A builder must edit files and run the tests without a person to ask; loopbus's sandbox
is what fences it (docs/agents.md, "Where an agent runs")."""

READ_ONLY = ["--allowedTools", "Read,Grep,Glob"]

PERMISSION_FLAGS = (
    "--permission-mode",
    "--allowedTools",
    "--allowed-tools",
    "--dangerously-skip-permissions",
)


def invoke(prompt: str, role: Role, extra: Sequence[str]) -> Invocation:
    argv = ["claude", "-p"]
    if "--output-format" not in extra:
        argv += ["--output-format", "json"]
    elif "stream-json" in extra and "--verbose" not in extra:
        argv.append("--verbose")  # -p refuses stream-json without it
    argv += unless_given(extra, PERMISSION_FLAGS, BUILD_MODE if role in EDITS else READ_ONLY)
    return Invocation(argv=[*argv, *extra], stdin=prompt)


def parse(stdout: str) -> Answer:
    results = [r for r in json_records(stdout) if isinstance(r, dict) and r.get("type") == "result"]
    if not results:
        raise OutputError('printed no result object (type "result"); is it Claude Code\'s -p?')
    result = results[-1]
    if result.get("is_error") or result.get("subtype", "success") != "success":
        why = str(result.get("result") or result.get("subtype") or "no detail")
        raise OutputError(f"reported an error ({result.get('subtype', '?')}): {why[:200]}")
    text = result.get("result")
    if not isinstance(text, str):
        raise OutputError('its result object has no text in "result"')
    usage: Mapping[str, Any] = result.get("usage") or {}
    tokens_in = sum(
        _count(usage, k)
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    return Answer(text=text, tokens_in=tokens_in, tokens_out=_count(usage, "output_tokens"))


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key, 0)
    return value if isinstance(value, int) and value > 0 else 0


CLI = Cli(
    name="claude",
    program="claude",
    install="npm install -g @anthropic-ai/claude-code",
    format_doc="https://docs.claude.com/en/docs/claude-code/headless",
    invoke=invoke,
    parse=parse,
)
