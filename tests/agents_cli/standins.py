"""Stand-ins for headless coding-agent CLIs: small Python programs written by the test,
put first on ``PATH`` under the CLI's name, that speak the CLI's documented output format.

Each stand-in reads the prompt on stdin, appends what it was given (argv, cwd, prompt) to
``calls.jsonl`` next to it, writes the files its step names into its working directory, and
prints its step's final ``message`` the way the real CLI would (Claude Code's ``json`` or,
when asked with ``--output-format stream-json``, its ``stream-json`` with tool events
before the result; Codex's ``exec --json`` events; Gemini CLI's ``json`` object) with the
step's token ``usage``. A step may instead exit non-zero or print ``raw`` output.

The folder is a 0777 ``mkdtemp`` one: a sandboxed agent runs as a uid of its own and must
read the scripts and append to the journal there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

STANDIN = r"""
import json, os, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAME = Path(sys.argv[0]).name
prompt = sys.stdin.read()
journal = HERE / "calls.jsonl"
calls = journal.read_text().splitlines()
with journal.open("a") as fh:
    fh.write(json.dumps({"cli": NAME, "argv": sys.argv[1:], "cwd": os.getcwd(),
                         "files": sorted(os.listdir(".")), "prompt": prompt}) + "\n")
steps = json.loads((HERE / "plan.json").read_text())
step = steps[min(len(calls), len(steps) - 1)]
for name, text in step.get("write", {}).items():
    Path(name).parent.mkdir(parents=True, exist_ok=True)
    Path(name).write_text(text)
if step.get("stderr"):
    sys.stderr.write(step["stderr"])
if "exit" in step:
    sys.exit(step["exit"])
if "raw" in step:
    sys.stdout.write(step["raw"])
    sys.exit(0)
message = step.get("message", "")
usage = step.get("usage", {"in": 0, "out": 0})
out = sys.stdout

def line(obj):
    out.write(json.dumps(obj) + "\n")

if NAME == "claude":
    claude_usage = {"input_tokens": usage["in"] - 100, "cache_creation_input_tokens": 60,
                    "cache_read_input_tokens": 40, "output_tokens": usage["out"]}
    result = {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1200,
              "duration_api_ms": 1100, "num_turns": 3, "result": message,
              "session_id": "0e639165-79b1-4bd4-bb0f-4cb4c15115d4", "total_cost_usd": 0.0123,
              "usage": claude_usage}
    fmt = sys.argv[sys.argv.index("--output-format") + 1]
    if fmt == "stream-json":
        line({"type": "system", "subtype": "init", "session_id": result["session_id"],
              "model": "claude-sonnet-4-5", "tools": ["Read", "Edit", "Bash"]})
        line({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Let me look at the files first."},
            {"type": "tool_use", "id": "toolu_01", "name": "Read",
             "input": {"file_path": "src/app.py"}}]}, "session_id": result["session_id"]})
        line({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": "{\"not\": \"it\"}"}]},
              "session_id": result["session_id"]})
        line({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": message}]}, "session_id": result["session_id"]})
        line(result)
    else:
        out.write(json.dumps(result))
elif NAME == "codex":
    line({"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"})
    line({"type": "turn.started"})
    line({"type": "item.started", "item": {"id": "item_0", "type": "command_execution",
          "command": "bash -lc ls", "aggregated_output": "", "exit_code": None,
          "status": "in_progress"}})
    line({"type": "item.completed", "item": {"id": "item_0", "type": "command_execution",
          "command": "bash -lc ls", "aggregated_output": "src\n{}\n", "exit_code": 0,
          "status": "completed"}})
    line({"type": "item.completed", "item": {"id": "item_1", "type": "agent_message",
          "text": "{\"an\": \"earlier message\"}"}})
    line({"type": "item.completed", "item": {"id": "item_2", "type": "agent_message",
          "text": message}})
    line({"type": "turn.completed", "usage": {"input_tokens": usage["in"],
          "cached_input_tokens": usage["in"] // 2, "output_tokens": usage["out"]}})
elif NAME == "gemini":
    out.write(json.dumps({"response": message, "stats": {"models": {"gemini-2.5-pro": {
        "api": {"totalRequests": 2, "totalErrors": 0, "totalLatencyMs": 5053},
        "tokens": {"prompt": usage["in"], "candidates": usage["out"] - 10,
                   "total": usage["in"] + usage["out"], "cached": 0, "thoughts": 10,
                   "tool": 0}}},
        "tools": {"totalCalls": 1, "totalSuccess": 1, "totalFail": 0},
        "files": {"totalLinesAdded": 0, "totalLinesRemoved": 0}}}, indent=2))
elif NAME == "opencode":
    session = {"timestamp": 1768191337567, "sessionID": "ses_44f9562d4ffe"}
    line({"type": "step_start", **session, "part": {"type": "step-start"}})
    line({"type": "text", **session, "part": {"type": "text", "text": "Reading first: {}"}})
    line({"type": "tool_use", **session, "part": {"type": "tool", "tool": "read",
          "callID": "c1", "state": {"status": "completed", "input": {"filePath": "a.py"},
          "output": "{}"}}})
    line({"type": "step_finish", **session, "part": {"type": "step-finish",
          "reason": "tool-calls", "tokens": {"input": usage["in"] - 50, "output": 5,
          "reasoning": 0, "cache": {"read": 50, "write": 0}}}})
    line({"type": "step_start", **session, "part": {"type": "step-start"}})
    line({"type": "text", **session, "part": {"type": "text", "text": message}})
    line({"type": "step_finish", **session, "part": {"type": "step-finish", "reason": "stop",
          "tokens": {"input": 0, "output": usage["out"] - 5, "reasoning": 0,
          "cache": {"read": 0, "write": 0}}}})
"""

NAMES = ("claude", "codex", "gemini", "opencode")


class Standins:
    """A folder of stand-in CLIs; ``plan`` sets what the next calls answer (the last step
    repeats), ``calls`` is what each call was given."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="loopbus-standins-"))
        self.dir.chmod(0o777)
        for name in NAMES:
            script = self.dir / name
            script.write_text(f"#!{sys.executable}\n{STANDIN}")
            script.chmod(0o755)
        self.journal = self.dir / "calls.jsonl"
        self.journal.touch()
        self.journal.chmod(0o666)
        self.plan([{"message": "nothing planned"}])

    def plan(self, steps: list[dict[str, Any]]) -> None:
        path = self.dir / "plan.json"
        path.write_text(json.dumps(steps))
        path.chmod(0o644)

    def calls(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.journal.read_text().splitlines()]

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def fenced(envelope: Mapping[str, Any], before: str = "Done: the change is in place.") -> str:
    """A final message as a chatty agent writes it: prose, then the envelope in a fence."""
    return f"{before}\n\n```json\n{json.dumps(envelope, indent=2)}\n```\n"


def path_with(folder: Path | None) -> str:
    """``PATH`` with ``folder`` first and no other folder holding a CLI of that name."""
    parts = [p for p in os.environ.get("PATH", os.defpath).split(os.pathsep) if p]
    parts = [p for p in parts if not any((Path(p) / n).exists() for n in NAMES)]
    return os.pathsep.join([str(folder), *parts] if folder else parts)


def loopbus_agent(
    cli: str,
    role: str,
    document: Mapping[str, Any] | str,
    *,
    path: str,
    cwd: Path,
    extra: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``loopbus agent CLI --role ROLE [-- extra]`` as a daemon would: the document on
    stdin, in ``cwd``, with ``PATH`` set to ``path``."""
    loopbus = str(Path(sys.executable).parent / "loopbus")
    argv = [loopbus, "agent", cli, "--role", role, *(("--", *extra) if extra else ())]
    stdin = document if isinstance(document, str) else json.dumps(document)
    environment = {**os.environ, "PATH": path, **(env or {})}
    return subprocess.run(
        argv, input=stdin, capture_output=True, text=True, cwd=cwd, env=environment, timeout=120
    )


def standins_fixture() -> Iterator[Standins]:
    folder = Standins()
    try:
        yield folder
    finally:
        folder.remove()
