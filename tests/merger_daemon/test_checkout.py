"""The merger moving a trunk that is checked out in a working tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

from dulwich import porcelain
from dulwich.repo import Repo

from workers.merger.gitops import move

AUTHOR = b"a <a@example.com>"


def repo_with_branch(path: Path) -> tuple[str, str]:
    """A non-bare repository on ``main`` (checked out) and a commit on ``side`` after it."""
    with Repo.init(str(path), mkdir=True) as repo:
        repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
        (path / "app.py").write_text("x = 1\n")
        porcelain.add(repo, [str(path / "app.py")])
        first = porcelain.commit(repo, b"one", author=AUTHOR, committer=AUTHOR).decode()
        (path / "app.py").write_text("x = 2\n")
        porcelain.add(repo, [str(path / "app.py")])
        second = porcelain.commit(repo, b"two", author=AUTHOR, committer=AUTHOR).decode()
        repo.refs[b"refs/heads/main"] = first.encode()  # main stays at one; two is ahead
        porcelain.reset(repo, "hard", first.encode())
    return first, second


def git_status(path: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(path), "status", "--porcelain"], capture_output=True, text=True
    )
    return done.stdout


def test_a_clean_checked_out_trunk_follows_the_move(tmp_path: Path) -> None:
    """After the merger moves a checked-out trunk, its files are the new commit's and git
    status shows nothing (no phantom reverts)."""
    first, second = repo_with_branch(tmp_path / "r")
    assert move(tmp_path / "r", "main", first, second)
    assert (tmp_path / "r" / "app.py").read_text() == "x = 2\n"
    assert git_status(tmp_path / "r") == ""


def test_uncommitted_edits_are_never_overwritten(tmp_path: Path) -> None:
    """A person's uncommitted edit survives the move; the ref still moves."""
    first, second = repo_with_branch(tmp_path / "r")
    (tmp_path / "r" / "app.py").write_text("x = 99  # mine\n")
    assert move(tmp_path / "r", "main", first, second)
    assert (tmp_path / "r" / "app.py").read_text() == "x = 99  # mine\n"
    with Repo(str(tmp_path / "r")) as repo:
        assert repo.refs[b"refs/heads/main"].decode() == second
