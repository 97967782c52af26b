"""Each CLI module on its own: the call it builds per role, and what it reads from output in
the CLI's documented format, failures included (no subprocess: the wrapper tests run them)."""

from __future__ import annotations

import json

import pytest

from loopbus.agents_cli.spec import OutputError
from loopbus.agents_cli.table import CLIS


@pytest.mark.parametrize(
    ("cli", "builder", "reviewer"),
    [
        pytest.param(
            "claude",
            ["claude", "-p", "--output-format", "json", "--permission-mode", "bypassPermissions"],
            ["claude", "-p", "--output-format", "json", "--allowedTools", "Read,Grep,Glob"],
            id="claude",
        ),
        pytest.param(
            "codex",
            [
                "codex",
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--sandbox",
                "workspace-write",
                "-",
            ],
            ["codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only", "-"],
            id="codex",
        ),
    ],
)
def test_the_builder_edits_and_every_other_role_reads(
    cli: str, builder: list[str], reviewer: list[str]
) -> None:
    """A builder's call is the CLI's edit mode, a reviewer's its read-only one; the prompt
    goes on stdin."""
    call = CLIS[cli].invoke("PROMPT", "builder", [])
    assert (call.argv, call.stdin) == (builder, "PROMPT")
    assert CLIS[cli].invoke("PROMPT", "reviewer", []).argv == reviewer


@pytest.mark.parametrize(
    ("cli", "extra", "absent"),
    [
        pytest.param(
            "claude",
            ["--permission-mode", "acceptEdits"],
            "bypassPermissions",
            id="claude-permission",
        ),
        pytest.param(
            "codex", ["--sandbox", "danger-full-access"], "workspace-write", id="codex-sandbox"
        ),
        pytest.param("gemini", ["--approval-mode=auto_edit"], "--yolo", id="gemini-approval"),
        pytest.param("opencode", ["--format", "default"], "json", id="opencode-format"),
    ],
)
def test_the_user_words_after_dashes_win_over_the_defaults(
    cli: str, extra: list[str], absent: str
) -> None:
    """A flag the user gives after ``--`` replaces the wrapper's default, never doubles it."""
    argv = CLIS[cli].invoke("P", "builder", extra).argv
    assert absent not in argv and all(word in argv for word in extra)


FAILED = {
    "claude": json.dumps(
        {
            "type": "result",
            "subtype": "error_during_execution",
            "is_error": True,
            "result": "overloaded",
        }
    ),
    "codex": '{"type":"thread.started","thread_id":"t"}\n{"type":"turn.started"}\n'
    '{"type":"turn.failed","error":{"message":"stream disconnected"}}\n',
    "gemini": json.dumps(
        {"response": None, "error": {"type": "ApiError", "message": "quota exceeded"}}
    ),
    "opencode": '{"type":"step_start","part":{}}\n'
    '{"type":"error","error":{"name":"APIError","data":{"message":"bad key"}}}\n',
}


@pytest.mark.parametrize("cli", sorted(FAILED))
def test_a_run_the_cli_reports_failed_is_no_answer(cli: str) -> None:
    """Each CLI's documented error shape is an error, with its words."""
    words = {
        "claude": "overloaded",
        "codex": "stream disconnected",
        "gemini": "quota exceeded",
        "opencode": "bad key",
    }[cli]
    with pytest.raises(OutputError, match=words):
        CLIS[cli].parse(FAILED[cli])


def test_claude_reads_the_array_of_messages_older_releases_printed() -> None:
    """An array of messages (what ``--output-format json`` printed in early releases) is read
    for its result object."""
    answer = CLIS["claude"].parse(
        json.dumps(
            [
                {"type": "system", "subtype": "init"},
                {
                    "type": "result",
                    "subtype": "success",
                    "is_error": False,
                    "result": "{}",
                    "usage": {"input_tokens": 5, "output_tokens": 2},
                },
            ]
        )
    )
    assert (answer.text, answer.tokens_in, answer.tokens_out) == ("{}", 5, 2)


def test_opencode_takes_the_last_step_text_and_sums_every_step() -> None:
    """The final message is the last step's text; the tokens are every step's."""
    lines = [
        {"type": "step_start", "part": {}},
        {"type": "text", "part": {"text": "looking"}},
        {
            "type": "step_finish",
            "part": {"reason": "tool-calls", "tokens": {"input": 10, "output": 1}},
        },
        {"type": "step_start", "part": {}},
        {"type": "text", "part": {"text": '{"a": '}},
        {"type": "text", "part": {"text": "1}"}},
        {
            "type": "step_finish",
            "part": {
                "reason": "stop",
                "tokens": {
                    "input": 20,
                    "output": 3,
                    "reasoning": 4,
                    "cache": {"read": 7, "write": 1},
                },
            },
        },
    ]
    answer = CLIS["opencode"].parse("\n".join(json.dumps(x) for x in lines))
    assert (answer.text, answer.tokens_in, answer.tokens_out) == ('{"a": 1}', 38, 8)
