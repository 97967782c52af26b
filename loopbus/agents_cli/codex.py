"""OpenAI Codex CLI, headless: ``codex exec --json -`` (the prompt on stdin).

Format implemented (the ``exec`` JSON Lines events, documented at
https://developers.openai.com/codex/noninteractive and typed in codex-rs/exec's
``exec_events.rs``): one object a line, ``type`` one of ``thread.started``,
``turn.started``, ``item.started`` / ``item.updated`` / ``item.completed`` (``item`` with
``id`` and ``type``: ``agent_message`` with ``text``, ``command_execution``,
``file_change``, ``reasoning`` …), ``turn.completed`` (``usage``: ``input_tokens``,
``cached_input_tokens`` — part of the input —, ``output_tokens``), ``turn.failed`` and
``error`` (``message``). The final message is the last completed ``agent_message``.
"""

from __future__ import annotations

from collections.abc import Sequence
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

SANDBOX_FLAGS = ("--sandbox", "-s", "--full-auto", "--dangerously-bypass-approvals-and-sandbox")

MESSAGES = ("agent_message", "assistant_message")
"""The final message's item type (``assistant_message`` in the first releases' docs)."""


def invoke(prompt: str, role: Role, extra: Sequence[str]) -> Invocation:
    # --skip-git-repo-check: a reviewer's copy of the head is no git repository.
    default = ["--sandbox", "workspace-write" if role in EDITS else "read-only"]
    mode = unless_given(extra, SANDBOX_FLAGS, default)
    argv = ["codex", "exec", "--json", "--skip-git-repo-check", *mode, *extra, "-"]
    return Invocation(argv=argv, stdin=prompt)


def parse(stdout: str) -> Answer:
    text: str | None = None
    tokens_in = tokens_out = 0
    for event in json_records(stdout):
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind in ("turn.failed", "error"):
            raise OutputError(f"reported {kind}: {_message(event)[:200]}")
        if kind == "item.completed":
            item = event.get("item") or {}
            if _item_type(item) in MESSAGES and isinstance(item.get("text"), str):
                text = item["text"]
        elif kind == "turn.completed":
            usage = event.get("usage") or {}
            tokens_in += _count(usage.get("input_tokens"))
            tokens_out += _count(usage.get("output_tokens"))
    if text is None:
        raise OutputError("printed no completed agent_message item; is it `codex exec --json`?")
    return Answer(text=text, tokens_in=tokens_in, tokens_out=tokens_out)


def _item_type(item: dict[str, Any]) -> Any:
    return item.get("type", item.get("item_type"))  # item_type: the first releases' name


def _message(event: dict[str, Any]) -> str:
    error = event.get("error")
    if isinstance(error, dict):
        return str(error.get("message", error))
    return str(event.get("message", "no detail"))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


CLI = Cli(
    name="codex",
    program="codex",
    install="npm install -g @openai/codex",
    format_doc="https://developers.openai.com/codex/noninteractive",
    invoke=invoke,
    parse=parse,
)
