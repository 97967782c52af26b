"""`[project] python`: checks run with the project's interpreter, not loopbus's."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from gate_repos import GitRepo, config
from gatekit import run_commit

from workers.errors import ConfigError
from workers.gates.config import parse_config
from workers.gates.runner import GateRunner

PROBE = """
[[check]]
id = "which"
command = "python -c 'import os, sys; sys.exit(0 if os.environ.get(\\"PROJECT_ENV\\") else 1)'"
timeout = 30
"""


def project_interpreter(folder: Path) -> Path:
    """An interpreter of the project's own: ``python`` in the ``bin`` folder of a virtual
    environment of its own (the sandbox shows a check that environment, read-only),
    marking what it runs so the test can tell it from loopbus's."""
    folder.mkdir(parents=True)
    python = folder / "python"
    python.write_text(f'#!/bin/sh\nPROJECT_ENV=1 exec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    return python


@pytest.mark.parametrize("named", [True, False], ids=["project-python", "loopbus-python"])
async def test_checks_run_with_the_project_interpreter(
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    tmp_path: Path,
    named: bool,
) -> None:
    """With [project] python, `python` in a check is that interpreter; without, loopbus's."""
    python = project_interpreter(tmp_path / "venv" / "bin")
    extra = f'python = "{python}"' if named else ""
    repo = git("repo")
    repo.commit({"loopbus.toml": config(project, PROBE, extra_project=extra)})
    run = (await run_commit(make_runner(repo))).check("which")
    assert run.outcome == ("pass" if named else "fail")


async def test_a_missing_interpreter_is_an_error_saying_so(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """A [project] python that is not on this machine is an error naming it, never a silent
    fallback to loopbus's interpreter."""
    repo = git("repo")
    extra = 'python = "/no/such/venv/bin/python"'
    repo.commit({"loopbus.toml": config(project, PROBE, extra_project=extra)})
    run = (await run_commit(make_runner(repo))).check("which")
    assert run.outcome == "error"
    assert "/no/such/venv/bin/python" in run.result.error


def test_project_python_must_be_a_string() -> None:
    """A bad value is one ConfigError naming the field."""
    text = '[project]\nid = "p"\npython = 3\n' + PROBE
    with pytest.raises(ConfigError, match=r"project\.python = 3 is not valid"):
        parse_config(text)
