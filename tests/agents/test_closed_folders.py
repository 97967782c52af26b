"""Folders closed to other users, as a run's uid meets them: a root daemon whose runs are
fenced by their uid alone (no bubblewrap) cannot start a program behind one (a pyenv
Python under /root), and says which folder and what to do; a bare name found in no folder
on PATH the uid may enter is told so, with the folders closed to it; any other refusal is
told in the system's own words."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from workers.agents.bwrap import Bubblewrap
from workers.agents.environment import agent_env, closed_to_others
from workers.agents.launch import BUBBLEWRAP_FAILS, NO_BUBBLEWRAP, NOT_ON_PATH, UID_DENIED
from workers.agents.local import LocalExecutor
from workers.agents.sandbox import SandboxResult, SandboxSpec
from workers.agents.workspace import remove, workdir

PYTHON = "/usr/bin/python3"  # outside any 0700 home: reachable by a run's uid on both paths

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the local executor's uid fence needs root")


@pytest.fixture
def worktree() -> Iterator[Path]:
    """A unit's worktree as the builder prepares it (a 0711 folder, a 0700 tree)."""
    folder = workdir("loopbus-build-", mode=0o711)
    tree = folder / "tree"
    tree.mkdir(mode=0o700)
    yield tree
    remove(folder)


@pytest.fixture
def python() -> str:
    if not Path(PYTHON).exists():
        pytest.skip(f"{PYTHON} is not installed")
    return PYTHON


async def run(
    executor: LocalExecutor, worktree: Path, argv: list[str], path: str | None = None
) -> SandboxResult:
    env = agent_env({}) if path is None else {**agent_env({}), "PATH": path}
    spec = SandboxSpec(argv=argv, stdin=b"", worktree=worktree, env=env, timeout_s=60)
    return await executor.run(spec)


@pytest.fixture
def folders() -> Iterator[tuple[Path, Path]]:
    """A folder only root may enter (0700, as /root is) and one open to all (0755), each
    holding an open ``bin``."""
    closed = workdir("loopbus-closed-", mode=0o700)
    opened = workdir("loopbus-open-", mode=0o755)
    (closed / "bin").mkdir(mode=0o755)
    (opened / "bin").mkdir(mode=0o755)
    yield closed, opened
    remove(closed)
    remove(opened)


@as_root
@pytest.mark.parametrize("namespaces", [None, False], ids=["default", "uid-only"])
async def test_a_program_refused_for_itself_is_told_in_the_system_s_words(
    namespaces: bool | None, worktree: Path
) -> None:
    """A script that is not executable, in a folder open to the run, is refused for itself:
    the line is the system's, with no word of a closed folder (there is none), with
    bubblewrap or without."""
    script = worktree / "tool.sh"
    script.write_text("#!/bin/sh\necho ran\n")
    script.chmod(0o644)
    result = await run(LocalExecutor(namespaces=namespaces), worktree, [str(script)])
    said = result.stderr.decode()
    assert result.exit_code == 127, said
    assert said.strip() == f"{script}: Permission denied"
    assert "closed to other users" not in said


@as_root
@pytest.mark.parametrize("way", ["named", "through-a-link"])
async def test_a_program_behind_a_closed_folder_names_that_folder(
    way: str, worktree: Path, python: str
) -> None:
    """With the uid as the only fence, a program under a folder only root may enter (as a
    pyenv Python in /root is) cannot start: the run fails with one line naming that
    folder, the run's uid and the fix, not a traceback from inside the launcher; a link
    in the middle of the path into the folder does not hide it."""
    closed = workdir("loopbus-closed-", mode=0o700)
    opened = workdir("loopbus-open-", mode=0o755)
    try:
        (closed / "bin").mkdir(mode=0o755)
        (closed / "bin" / "python").symlink_to(python)
        (opened / "bin").symlink_to(closed / "bin")
        program = (closed if way == "named" else opened) / "bin" / "python"
        executor = LocalExecutor(namespaces=False)
        result = await run(executor, worktree, [str(program), "-c", "print('ran')"])
    finally:
        remove(closed)
        remove(opened)
    said = result.stderr.decode()
    assert result.exit_code == 127, said
    assert "ran" not in result.stdout.decode()
    assert "Traceback" not in said
    assert said.startswith(f"{program}: {UID_DENIED} "), said
    # namespaces=False: bubblewrap is not wanted, so the fix says nothing of it
    assert said.rstrip().endswith(
        f"({closed} is closed to other users): put it where any user can read it"
    ), said


@as_root
@pytest.mark.parametrize(
    ("bwrap", "fix"),
    [(None, NO_BUBBLEWRAP), ("/bin/false", BUBBLEWRAP_FAILS)],
    ids=["bwrap-absent", "bwrap-failing"],
)
async def test_the_fix_for_a_closed_folder_matches_why_bubblewrap_does_not_wrap(
    bwrap: str | None, fix: str, worktree: Path, folders: tuple[Path, Path], python: str
) -> None:
    """Without bubblewrap the fix is to install it; where it is installed but cannot make a
    sandbox (a container forbidding its namespaces), installing it would change nothing,
    and the line says that bubblewrap fails here instead."""
    closed, _ = folders
    program = closed / "bin" / "python"
    program.symlink_to(python)
    executor = LocalExecutor(bwrap=bwrap)
    executor.bubblewrap = Bubblewrap(bwrap, as_root=True)  # None: not installed
    assert await executor.uid_only()
    said = (await run(executor, worktree, [str(program), "-c", "print('ran')"])).stderr.decode()
    assert said.rstrip().endswith(
        f"({closed} is closed to other users): {fix}, or put it where any user can read it"
    ), said
    if bwrap is not None:
        assert "install bubblewrap" not in said


async def test_a_failing_bubblewrap_is_not_told_to_be_installed() -> None:
    """The executor's reason for not wrapping, where ``bwrap`` is there but fails: what
    fails and what to do about it, not 'install bubblewrap'."""
    problem = await Bubblewrap("/bin/false", as_root=True).problem()
    assert problem is not None
    assert "bubblewrap at /bin/false cannot make a sandbox here" in problem
    assert "forbids the namespaces it makes" in problem
    assert "install" not in problem


@as_root
async def test_a_missing_bare_name_is_not_found_not_denied(
    worktree: Path, folders: tuple[Path, Path]
) -> None:
    """A command found in no folder on PATH, with a folder closed to the run's uid first on
    it (as loopbus's interpreter's under /root is): the line says it was not found where
    the uid may look and names the closed folder, and claims no permission was denied."""
    closed, opened = folders
    path = os.pathsep.join([str(closed / "bin"), str(opened / "bin"), "/usr/bin", "/bin"])
    result = await run(LocalExecutor(namespaces=False), worktree, ["no-such-tool-xyz"], path)
    said = result.stderr.decode().strip()
    assert result.exit_code == 127, said
    assert said.startswith(f"no-such-tool-xyz: {NOT_ON_PATH} "), said
    assert said.endswith(
        f"may enter (closed to it: {closed / 'bin'}): put it where any user can read it"
    ), said
    assert UID_DENIED not in said and "is closed to other users" not in said


@as_root
async def test_a_missing_bare_name_with_every_folder_open_is_the_system_s_words(
    worktree: Path, folders: tuple[Path, Path]
) -> None:
    _, opened = folders
    path = os.pathsep.join([str(opened / "bin"), "/usr/bin", "/bin"])
    result = await run(LocalExecutor(namespaces=False), worktree, ["no-such-tool-xyz"], path)
    assert result.stderr.decode().strip() == "no-such-tool-xyz: No such file or directory"


@as_root
async def test_a_bare_name_refused_for_itself_is_told_in_the_system_s_words(
    worktree: Path, folders: tuple[Path, Path]
) -> None:
    """A script on PATH that is not executable, in a folder the uid may enter, is refused for
    itself, even with a closed folder earlier on PATH: the system's line, no folder blamed."""
    closed, opened = folders
    script = opened / "bin" / "tool-xyz"
    script.write_text("#!/bin/sh\necho ran\n")
    script.chmod(0o644)
    path = os.pathsep.join([str(closed / "bin"), str(opened / "bin"), "/usr/bin", "/bin"])
    result = await run(LocalExecutor(namespaces=False), worktree, ["tool-xyz"], path)
    said = result.stderr.decode().strip()
    assert result.exit_code == 127, said
    assert said == "tool-xyz: Permission denied"


@as_root
async def test_a_bare_name_only_behind_a_closed_folder_names_that_folder(
    worktree: Path, folders: tuple[Path, Path], python: str
) -> None:
    """A command on PATH only in a folder closed to the run's uid cannot start: the line
    names the folders on PATH closed to it, and the fix."""
    closed, opened = folders
    (closed / "bin" / "py-xyz").symlink_to(python)
    path = os.pathsep.join([str(closed / "bin"), str(opened / "bin"), "/usr/bin", "/bin"])
    result = await run(LocalExecutor(namespaces=False), worktree, ["py-xyz", "-c", "1"], path)
    said = result.stderr.decode().strip()
    assert result.exit_code == 127, said
    assert said.startswith(f"py-xyz: {NOT_ON_PATH} "), said
    assert f"(closed to it: {closed / 'bin'})" in said


@as_root
async def test_a_bare_command_name_runs_with_the_uid_alone(worktree: Path) -> None:
    """A command named without a folder is looked up on PATH, which needs a module of
    loopbus's interpreter the launcher imports before dropping to the run's uid: where
    that interpreter lies under a folder closed to other users (a pyenv Python in /root)
    the uid could not import it afterwards."""
    executor = LocalExecutor(namespaces=False)
    result = await run(executor, worktree, ["sh", "-c", "echo ran"])
    assert result.exit_code == 0, result.start_error or result.stderr.decode()
    assert "ran" in result.stdout.decode()


@as_root
async def test_the_shipped_agents_probe_says_why_the_uid_fence_cannot_run_them() -> None:
    """The demo's probe runs loopbus's interpreter as an agent would. Where that
    interpreter lies under a folder closed to other users (this checkout's under /root, a
    pyenv Python), the uid-only fence cannot run it and the probe names the folder; where
    any user can reach it, the probe passes. Either way its answer matches a direct look."""
    from workers.agents.runner import shipped_agents_problem

    closed = closed_to_others(sys.executable)
    problem = await shipped_agents_problem(LocalExecutor(namespaces=False))
    if closed is None:
        assert problem is None
    else:
        assert problem is not None and UID_DENIED in problem
        assert f"({closed} is closed to other users)" in problem


def test_closed_to_others_finds_the_folder_a_run_s_uid_cannot_enter() -> None:
    """A 0700 folder on the way is found: as named, behind the last name's link, and
    behind a link in the middle of the path; an open path gives none."""
    closed = workdir("loopbus-closed-", mode=0o700)
    opened = workdir("loopbus-open-", mode=0o755)
    try:
        (closed / "bin").mkdir(mode=0o755)
        (closed / "bin" / "python").symlink_to(PYTHON)
        (opened / "python").symlink_to(closed / "bin" / "python")
        (opened / "bin").symlink_to(closed / "bin")
        assert closed_to_others(closed / "bin" / "python") == closed
        assert closed_to_others(opened / "python") == closed  # the last name's link
        assert closed_to_others(opened / "bin" / "python") == closed  # a folder's link
        assert closed_to_others(opened / "bin" / ".." / "x") == closed  # ".." of its target
        assert closed_to_others(opened) is None
        assert closed_to_others(opened / "absent" / "python") is None
    finally:
        remove(closed)
        remove(opened)
