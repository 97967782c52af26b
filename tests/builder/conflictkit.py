"""A builder command for the conflict tests, written as any agent would be: it reads the
brief, looks around its worktree with ``git``, edits files, and answers an envelope.

Each call appends what it saw (the brief, the files, ``git status``/``log``/``MERGE_HEAD``)
to ``<folder>/<unit>.jsonl`` and takes the next step of ``<folder>/<unit>.plan.json`` (the
last repeats). A step may ``write`` files, run ``git`` commands (``git``: lists of
arguments), and print ``stdout`` (default: ``completed``).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SCRIPT = r"""
import json, subprocess, sys
from pathlib import Path

folder = Path(sys.argv[1])
brief = json.load(sys.stdin)
unit = brief["unit"]


def git(*args):
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=30)
    except OSError as exc:
        return {"code": -1, "out": "", "err": str(exc)}
    return {"code": done.returncode, "out": done.stdout, "err": done.stderr[-400:]}


merge_head = Path(".git/MERGE_HEAD")
seen = {
    "brief": brief,
    "files": {p: Path(p).read_text() for p in brief["files"] if Path(p).is_file()},
    "status": git("status", "--porcelain"),
    "head": git("log", "-1", "--format=%H"),
    "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
    "merge_head": merge_head.read_text().strip() if merge_head.exists() else None,
}
log = folder / f"{unit}.jsonl"
calls = log.read_text().splitlines() if log.exists() else []
with open(log, "a") as handle:
    handle.write(json.dumps(seen) + "\n")
steps = json.loads((folder / f"{unit}.plan.json").read_text())
step = steps[min(len(calls), len(steps) - 1)]
for name, text in step.get("write", {}).items():
    Path(name).parent.mkdir(parents=True, exist_ok=True)
    Path(name).write_text(text)
ran = [git(*args) for args in step.get("git", [])]
if ran:
    with open(folder / f"{unit}.git.jsonl", "a") as handle:
        handle.write(json.dumps(ran) + "\n")
print(json.dumps(step.get("stdout", {"schema": "loopbus.envelope.v2", "status": "completed"})))
"""


class ConflictBuilder:
    """The script, its per-unit plans, and what each call saw."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.script = folder / "builder.py"
        self.script.write_text(SCRIPT)

    @property
    def command(self) -> str:
        return f"{sys.executable} {self.script} {self.folder}"

    def plan(self, unit: str, steps: list[dict[str, Any]]) -> None:
        path = self.folder / f"{unit}.plan.json"
        path.write_text(json.dumps(steps))
        path.chmod(0o644)
        for log in (f"{unit}.jsonl", f"{unit}.git.jsonl"):
            (self.folder / log).touch()
            (self.folder / log).chmod(0o666)  # every run has a uid of its own, each appends

    def calls(self, unit: str) -> list[dict[str, Any]]:
        log = self.folder / f"{unit}.jsonl"
        return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []

    def git_runs(self, unit: str) -> list[list[dict[str, Any]]]:
        log = self.folder / f"{unit}.git.jsonl"
        return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


@contextmanager
def builder_folder() -> Iterator[ConflictBuilder]:
    """A 0777 folder outside pytest's private one: each sandboxed run has a uid of its own
    and must read the script and append to the logs."""
    folder = Path(tempfile.mkdtemp(prefix="loopbus-conflict-agent-"))
    folder.chmod(0o777)
    try:
        yield ConflictBuilder(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def has_git() -> bool:
    """``git`` where the sandbox shows it to an agent (``/usr``)."""
    found = shutil.which("git")
    return found is not None and os.path.realpath(found).startswith("/usr/")
