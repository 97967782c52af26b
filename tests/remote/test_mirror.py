"""A repository by URL (``workers.remote``): the ``--repo`` value, a mirror of a real bare
repository reached by a file:// URL, and the compare-and-swap that lets only one of two
writers move a branch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from workers.errors import RepoError
from workers.remote import Mirror, mirror_at, parse_source

FIX = "file://, ssh:// or https://"


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """A bare repository whose main holds one commit."""
    bare = tmp_path / "remote.git"
    _git("init", "-q", "--bare", "-b", "main", str(bare))
    tree = _git("--git-dir", str(bare), "hash-object", "-t", "tree", "-w", "/dev/null")
    first = _commit(bare, tree, None, "first")
    _git("--git-dir", str(bare), "update-ref", "refs/heads/main", first)
    return bare


def _commit(git_dir: Path, tree: str, parent: str | None, message: str) -> str:
    parents = ["-p", parent] if parent else []
    env_args = ["-c", "user.name=t", "-c", "user.email=t@x"]
    return _git(*env_args, "--git-dir", str(git_dir), "commit-tree", *parents, "-m", message, tree)


def _ref(git_dir: Path, ref: str) -> str:
    return _git("--git-dir", str(git_dir), "rev-parse", ref)


def _mirror(remote: Path, root: Path) -> Mirror:
    mirror = mirror_at(remote.as_uri(), root)
    mirror.ensure()
    return mirror


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("ftp://host/repo.git", "the scheme 'ftp' is not served"),
        ("ext::sh -c touch% /tmp/owned", "transport helper"),
        ("ssh://-oProxyCommand=touch/x", "no host"),
        ("file://server/share/repo.git", "file:///absolute/path"),
        ("https://host/", "names no repository path"),
        ("", "is empty"),
    ],
)
def test_a_bad_repo_value_is_one_line_naming_it_and_the_fix(value: str, said: str) -> None:
    with pytest.raises(RepoError) as caught:
        parse_source(value)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("--repo ")
    assert said in message and (value in message or not value)
    assert FIX in message or "file:///" in message


def test_a_token_in_the_url_is_never_shown() -> None:
    with pytest.raises(RepoError) as caught:
        parse_source("https://s3cr3t@host/")
    assert "s3cr3t" not in str(caught.value) and "***@host" in str(caught.value)


@pytest.mark.parametrize(
    ("value", "remote"),
    [
        ("file:///srv/git/app.git", True),
        ("ssh://git@host/app.git", True),
        ("https://host/org/app.git", True),
        ("git@host:org/app.git", True),
        ("/srv/git/app", False),
        ("relative/folder", False),
    ],
)
def test_paths_stay_paths_and_urls_are_mirrored(value: str, remote: bool) -> None:
    source = parse_source(value)
    assert (source.url is not None) is remote
    assert (source.path is not None) is not remote


def test_of_two_mirrors_racing_one_moves_trunk_and_the_other_sees_it(
    remote: Path, tmp_path: Path
) -> None:
    """Both build on the trunk they fetched; only the first push that names it lands;
    the other is told so, and its mirror then holds the winner's trunk."""
    a, b = _mirror(remote, tmp_path / "a"), _mirror(remote, tmp_path / "b")
    assert a.path != b.path and (a.path / "HEAD").read_text() == "ref: refs/heads/main\n"
    old = _ref(a.path, "main")
    tree = _ref(a.path, "main^{tree}")
    ours, theirs = _commit(a.path, tree, old, "a"), _commit(b.path, tree, old, "b")
    assert a.advance("main", old, ours) is True
    assert b.advance("main", old, theirs) is False
    assert _ref(remote, "main") == ours == _ref(b.path, "main")
    assert b.advance("main", ours, _commit(b.path, tree, ours, "b again")) is True
    assert a.advance("main", None, ours) is False  # "must not exist" fails on a branch that does


def test_a_unit_branch_is_pushed_and_deleted_only_at_the_head_named(
    remote: Path, tmp_path: Path
) -> None:
    a, b = _mirror(remote, tmp_path / "a"), _mirror(remote, tmp_path / "b")
    old = _ref(a.path, "main")
    head = _commit(a.path, _ref(a.path, "main^{tree}"), old, "unit")
    a.push_branch("loopbus/p/U1", head)
    assert not b.holds(head)
    b.fetch()
    assert b.holds("loopbus/p/U1") and _ref(b.path, "loopbus/p/U1") == head
    assert b.delete_branch("loopbus/p/U1", old) is False  # it holds head, not old
    assert b.delete_branch("loopbus/p/U1", head) is True
    a.fetch()
    assert not a.holds("loopbus/p/U1")


BAD = [
    ("ftp://host/repo.git", "the scheme 'ftp' is not served"),
    ("file:///nowhere/at/all.git", "does not appear to be a git repository"),
]
DAEMON = [sys.executable, "-P", "-m", "workers.merger", "--nats-url", "nats://127.0.0.1:9"]
UP = [str(Path(sys.executable).with_name("loopbus")), "up"]


@pytest.mark.parametrize(("value", "said"), BAD)
@pytest.mark.parametrize("command", [DAEMON, UP], ids=["daemon", "up"])
def test_a_bad_or_unreachable_repo_url_is_one_line_and_exit_2(
    tmp_path: Path, command: list[str], value: str, said: str
) -> None:
    where = ["--mirror-dir", str(tmp_path / "m")] if command is DAEMON else []
    where += ["--data-dir", str(tmp_path / "data")]
    done = subprocess.run(
        [*command, "--repo", value, *where],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert said in lines[0] and value in lines[0]
