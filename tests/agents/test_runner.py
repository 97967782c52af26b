"""The agent runner: one environment, one sandbox, and no run without one."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from dulwich import porcelain
from dulwich.repo import Repo

from workers.agents.config import parse
from workers.agents.environment import closed_to_others
from workers.agents.launch import UID_DENIED
from workers.agents.local import LocalExecutor
from workers.agents.runner import choose, run_agent
from workers.agents.workspace import read_only_copy, remove, workdir

TOML = '[project]\nid = "calc"\n'


def commit_files(path: Path, files: dict[str, str]) -> tuple[Path, str]:
    """A repository at ``path`` with ``files`` committed; its head sha."""
    path.mkdir(parents=True)
    Repo.init(str(path)).close()
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    porcelain.add(str(path), [str(path / name) for name in files])
    sha = porcelain.commit(str(path), message=b"files", author=b"t <t@t>", committer=b"t <t@t>")
    return path, sha.decode()


@pytest.fixture
def folder() -> Iterator[Path]:
    path = workdir("loopbus-runner-", mode=0o755)
    (path / "work").mkdir()
    yield path
    remove(path)


async def test_no_sandbox_no_run(folder: Path) -> None:
    """When the executor the config names cannot run here, the command never starts and
    the result says why in one line (the round fails with it): no bare fallback."""
    config = parse(TOML + '\n[agents]\nexecutor = "container"\nimage = "loopbus-absent:0"\n')
    marker = folder / "work" / "ran"
    result = await run_agent(
        config,
        ["/bin/sh", "-c", f"touch {marker}"],
        stdin=b"",
        worktree=folder / "work",
        timeout_s=30,
    )
    assert result.exit_code is None and result.executor == "none"
    failure = result.failure(30) or ""
    assert "no sandbox for the agent here" in failure and 'sandbox = "none"' in failure
    assert "\n" not in failure
    assert not marker.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the local executor's uid fence needs root")
async def test_a_shipped_agent_runs_in_the_sandbox_from_a_read_only_copy(
    folder: Path, tmp_path: Path, bubblewrap: str | None
) -> None:
    """``python -m loopbus…`` resolves to loopbus's interpreter and imports its packages
    inside the sandbox; the read-only copy it runs in is readable (made under ``up``'s
    umask 077) and stays unwritable. Where bubblewrap works here (asked apart from the
    executor), the executor must wrap the run in it."""
    repo, head = commit_files(tmp_path / "repo", {"src/app.py": "x=1\n"})
    copy = folder / "tree"
    copy.mkdir()
    old_umask = os.umask(0o077)  # as `loopbus up` runs its daemons: the copy is made 0600
    try:
        read_only_copy(repo, head, copy)
    finally:
        os.umask(old_umask)
    config = parse(TOML, repo=str(repo))
    result = await run_agent(
        config,
        [
            "python",
            "-c",
            "import loopbus.scripted.reviewer, os, sys; print(sys.executable); "
            "print(open('src/app.py').read().strip()); "
            "print(os.access('src/app.py', os.W_OK), os.access('.', os.W_OK))",
        ],
        stdin=b"",
        worktree=folder / "work",
        read_only=(copy,),
        cwd=copy,
        timeout_s=60,
        env={"LOOPBUS_REVIEWER": "r1"},
    )
    executor, _ = await choose(config.agents)
    assert isinstance(executor, LocalExecutor)  # no [agents] image: the local executor
    if bubblewrap is None:
        assert await executor.wraps(), await executor.bubblewrap.problem()
    elif closed_to_others(sys.executable) is not None:
        # The uid alone fences the run and loopbus's interpreter lies behind a folder closed
        # to other users: the run cannot start it, and says why and what to do.
        assert UID_DENIED in (result.failure(60) or "")
        return
    assert result.failure(60) is None, result.stderr.decode()
    assert result.executor == "local"
    interpreter, text, file_writable, folder_writable = result.stdout.decode().split()
    assert Path(interpreter).parent == Path(sys.executable).parent
    assert (text, file_writable, folder_writable) == ("x=1", "False", "False")
