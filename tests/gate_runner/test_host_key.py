"""A cached result answers only for a runner that would measure the same thing: the same
interpreter (by its bytes, not its path) and the same fence. Otherwise the second runner
runs the check itself."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from gate_repos import GitRepo, config
from gatekit import run_commit
from test_fenced import _sandbox_or_skip

from workers.gates.config import parse_config
from workers.gates.host_key import host_salt, interpreter_identity
from workers.gates.runner import GateRunner

CHECK = """
[[check]]
id = "ok"
command = "python -c 'import sys; sys.exit(0)'"
parser = "exit-code"
timeout = 30
"""


def interpreter(path: Path, marker: str) -> Path:
    """A project interpreter: a wrapper around this one, told apart by ``marker``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\n# {marker}\nexec "{sys.executable}" "$@"\n')
    path.chmod(0o755)
    return path


def test_the_salt_names_the_fence_and_the_interpreter_of_a_host_check(tmp_path: Path) -> None:
    python = interpreter(tmp_path / "bin" / "python", "one")
    checks = CHECK + '\n[[check]]\nid = "boxed"\ncommand = "true"\nimage = "x:1"\n'
    plain = parse_config(config("p", checks))
    named = parse_config(config("p", checks, extra_project=f'python = "{python}"'))
    host, boxed = plain.check("ok"), plain.check("boxed")
    assert host_salt(plain, host, fenced=True) != host_salt(plain, host, fenced=False)
    assert host_salt(plain, boxed, fenced=True) == host_salt(plain, boxed, fenced=False)
    assert host_salt(named, named.check("ok"), fenced=True) != host_salt(plain, host, fenced=True)
    assert interpreter_identity("") == interpreter_identity(sys.executable)
    assert interpreter_identity("/no/such/python") == "missing:/no/such/python"


async def test_another_interpreter_at_the_same_path_runs_again(
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    tmp_path: Path,
) -> None:
    """Two machines with `[project] python` at one path but different interpreters there
    (stood in by rewriting the file between two runners) do not share a result; the same
    interpreter does."""
    python = interpreter(tmp_path / "venv" / "bin" / "python", "3.11")
    repo = git("repo")
    commit = repo.commit(
        {"loopbus.toml": config(project, CHECK, extra_project=f'python = "{python}"')}
    )
    first = make_runner(repo, fenced=False)
    assert (await run_commit(first, commit)).check("ok").cached is False
    same = make_runner(repo, fenced=False)
    assert (await run_commit(same, commit)).check("ok").cached is True
    assert same.executions == 0
    interpreter(python, "3.12")
    other = make_runner(repo, fenced=False)
    assert (await run_commit(other, commit)).check("ok").cached is False
    assert other.executions == 1


async def test_an_unfenced_result_does_not_answer_a_fenced_runner(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    await _sandbox_or_skip()
    repo = git("repo")
    commit = repo.commit({"loopbus.toml": config(project, CHECK)})
    loose = make_runner(repo, fenced=False)
    assert (await run_commit(loose, commit)).check("ok").cached is False
    fenced = make_runner(repo)
    assert (await run_commit(fenced, commit)).check("ok").cached is False
    assert fenced.executions == 1
    again = make_runner(repo)
    assert (await run_commit(again, commit)).check("ok").cached is True
    assert again.executions == 0
