"""Gemini CLI, headless: ``gemini -p … --output-format json``.

Format implemented (https://geminicli.com/docs/cli/headless/, "JSON output"): one object
when the run ends, with ``response`` (the final message), ``stats`` (per model under
``stats.models.<name>.tokens``: ``prompt``, ``candidates``, ``total``, ``cached``,
``thoughts``, ``tool``) and, when the request failed, ``error``. What is piped on stdin is
read with the ``-p`` prompt, so the prompt goes there and ``-p`` only points at it.
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

POINTER = "Your task and how to answer are on standard input; follow them."


def invoke(prompt: str, role: Role, extra: Sequence[str]) -> Invocation:
    argv = ["gemini", "-p", POINTER]
    argv += unless_given(extra, ("--output-format", "-o"), ["--output-format", "json"])
    if role in EDITS:  # no person to approve an edit; loopbus's sandbox fences it
        argv += unless_given(extra, ("--yolo", "-y", "--approval-mode"), ["--yolo"])
    return Invocation(argv=[*argv, *extra], stdin=prompt)


def parse(stdout: str) -> Answer:
    objects = [r for r in json_records(stdout) if isinstance(r, dict)]
    answers = [r for r in objects if "response" in r or "error" in r]
    if not answers:
        raise OutputError('printed no object with "response"; is it `--output-format json`?')
    answer = answers[-1]
    error = answer.get("error")
    if error:
        message = error.get("message", error) if isinstance(error, dict) else error
        raise OutputError(f"reported an error: {str(message)[:200]}")
    text = answer.get("response")
    if not isinstance(text, str):
        raise OutputError('its "response" is not text')
    tokens_in = tokens_out = 0
    models = (answer.get("stats") or {}).get("models") or {}
    for model in models.values() if isinstance(models, dict) else []:
        tokens = (model or {}).get("tokens") or {}
        prompt, total = _count(tokens.get("prompt")), _count(tokens.get("total"))
        tokens_in += prompt
        tokens_out += max(total - prompt, 0) if total else _count(tokens.get("candidates"))
    return Answer(text=text, tokens_in=tokens_in, tokens_out=tokens_out)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


CLI = Cli(
    name="gemini",
    program="gemini",
    install="npm install -g @google/gemini-cli",
    format_doc="https://geminicli.com/docs/cli/headless/",
    invoke=invoke,
    parse=parse,
)
