"""`loopbus up --repo`: one trunk for every daemon, config from the trunk commit, bad config
stops it at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dulwich import porcelain
from dulwich.repo import Repo

from bus import free_port
from loopbus import scaffold
from loopbus.repo_check import uncommitted_config
from workers.repository import resolve

from .conftest import loopbus, start_up

pytestmark = pytest.mark.slow


def commit_config(path: Path, text: str, branch: str = "main") -> None:
    """A repository whose ``branch`` holds ``loopbus.toml`` = ``text``."""
    with Repo.init(str(path), mkdir=True) as repo:
        repo.refs.set_symbolic_ref(b"HEAD", f"refs/heads/{branch}".encode())
        (path / "loopbus.toml").write_text(text)
        porcelain.add(repo, [str(path / "loopbus.toml")])
        porcelain.commit(repo, b"config", author=b"a <a@x>", committer=b"a <a@x>")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        pytest.param("[project\n", "not valid TOML", id="not-toml"),
        pytest.param(
            '[project]\nid = "p"\n[[check]]\nid = "t"\ncommand = "true"\n[build]\nmode = "fast"\n',
            "build.mode = 'fast' is not valid: use one of long, normal",
            id="build-mode",
        ),
        pytest.param(
            '[project]\nid = "p"\n[[check]]\nid = "t"\ncommand = "true"\n[review]\ncommand = "r"\n',
            "review.roster",
            id="review-without-roster",
        ),
        pytest.param(
            '[project]\nid = "p"\n[[check]]\nid = "t"\ncommand = "true"\n[agents]\nsandbox = 1\n',
            "agents.sandbox = 1 is not valid",
            id="agents-sandbox",
        ),
    ],
)
def test_an_invalid_config_on_trunk_stops_up_in_one_line(
    tmp_path: Path, text: str, needle: str
) -> None:
    """up reads loopbus.toml from the trunk commit and stops with exit 2 and one line naming
    the field, before starting any server or daemon."""
    commit_config(tmp_path / "repo", text)
    result = loopbus("up", "--repo", str(tmp_path / "repo"), "--data-dir", str(tmp_path / "d"))
    assert result.code == 2, result.out + result.err
    assert needle in result.err and result.err.count("\n") == 1, result.err
    assert "loopbus.toml on main" in result.err
    assert "working tree" not in result.err  # it holds what trunk holds: nothing to commit
    assert "NATS" not in result.out


BAD_MODE = '[project]\nid = "p"\n[[check]]\nid = "t"\ncommand = "true"\n[build]\nmode = "fast"\n'


@pytest.mark.parametrize("command", ["up", "plan-check"])
def test_an_error_fixed_only_in_the_working_tree_says_to_commit_it(
    tmp_path: Path, command: str
) -> None:
    """Trunk's loopbus.toml is wrong and the working tree's was fixed but not committed:
    the error about trunk's file says the working tree's differs and to commit it."""
    repo = tmp_path / "repo"
    commit_config(repo, BAD_MODE)
    (repo / "loopbus.toml").write_text(BAD_MODE.replace('"fast"', '"long"'))
    if command == "up":
        result = loopbus("up", "--repo", str(repo), "--data-dir", str(tmp_path / "d"))
    else:
        plan = tmp_path / "plan.toml"
        plan.write_text('[slice]\nid = "S1"\n[[unit]]\nid = "A"\n')
        result = loopbus("plan", "check", str(plan), "--repo", str(repo))
    assert result.code == 2, result.out + result.err
    [line] = result.err.splitlines()
    assert "build.mode = 'fast' is not valid" in line
    assert line.endswith(
        "loopbus.toml in your working tree differs from trunk's, which loopbus reads: commit it"
    ), line


def test_a_trunk_that_names_no_commit_is_one_line(tmp_path: Path) -> None:
    """--trunk naming no branch is refused before anything starts, in one line naming the
    branches there are (it once ended "; pass --trunk", to a user who had)."""
    scaffold.write(tmp_path / "calc")
    result = loopbus("up", "--repo", str(tmp_path / "calc"), "--trunk", "release")
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    assert result.err.startswith("loopbus: error: --trunk 'release' names no commit in --repo")
    assert result.err.rstrip().endswith("; pass one of its branches: main"), result.err


def test_a_directory_that_is_no_repository_is_one_clean_line(tmp_path: Path) -> None:
    """A directory with no .git is said once, without the --trunk hint (it once named
    --repo twice and blamed the current branch)."""
    (tmp_path / "notgit").mkdir()
    result = loopbus("up", "--repo", str(tmp_path / "notgit"), "--data-dir", str(tmp_path / "d"))
    assert result.code == 2, result.out + result.err
    assert result.err.splitlines() == [
        f"loopbus: error: --repo {tmp_path / 'notgit'} is not a git repository (no .git "
        "found): give the path of a git repository"
    ]


def test_a_repository_with_no_commit_is_told_to_make_one(tmp_path: Path) -> None:
    """`git init` and nothing committed: up says to make a first commit, in one line (not
    "pass --trunk": no branch would do)."""
    with Repo.init(str(tmp_path / "fresh"), mkdir=True):
        pass
    (tmp_path / "fresh" / "loopbus.toml").write_text('[project]\nid = "p"\n')
    result = loopbus("up", "--repo", str(tmp_path / "fresh"), "--data-dir", str(tmp_path / "d"))
    assert result.code == 2, result.out + result.err
    [line] = result.err.splitlines()
    assert "has no commit yet: make a first commit" in line and "--trunk" not in line


def commit_without_config(path: Path) -> None:
    """A repository whose main holds one commit, with no ``loopbus.toml``."""
    with Repo.init(str(path), mkdir=True) as repo:
        repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
        (path / "README").write_text("calc\n")
        porcelain.add(repo, [str(path / "README")])
        porcelain.commit(repo, b"first", author=b"a <a@x>", committer=b"a <a@x>")


@pytest.mark.parametrize("given", ["path", "url"])
def test_a_trunk_with_no_config_is_refused_before_anything_starts(
    tmp_path: Path, given: str
) -> None:
    """No loopbus.toml on trunk names no project: up refuses in one line naming the
    repository and the fix, exit 2, with no server started (it once started, suggested a
    project that did not exist, and the gate runner crash-looped)."""
    repo = tmp_path / "calc"
    commit_without_config(repo)
    value = str(repo) if given == "path" else repo.as_uri()
    result = loopbus(
        "up", "--repo", value, "--data-dir", str(tmp_path / "d"), "--no-web", timeout=30
    )
    assert result.code == 2, result.out + result.err
    [line] = result.err.splitlines()
    assert line.startswith("loopbus: error: --repo ") and "trunk main (" in line, line
    assert "has no loopbus.toml" in line and "loopbus init DIR" in line, line
    assert "NATS" not in result.out and "tail" not in result.out
    if given == "path":
        assert not (tmp_path / "d").exists()  # checked before the data directory is made


def test_an_uncommitted_config_on_a_trunk_with_none_says_to_commit_it(tmp_path: Path) -> None:
    """The working tree has a loopbus.toml that trunk does not: the refusal says to commit."""
    repo = tmp_path / "calc"
    commit_without_config(repo)
    (repo / "loopbus.toml").write_text(scaffold.LOOPBUS_TOML)
    result = loopbus("up", "--repo", str(repo), "--data-dir", str(tmp_path / "d"))
    assert result.code == 2, result.out + result.err
    [line] = result.err.splitlines()
    assert line.endswith(
        "the loopbus.toml in your working tree is not committed: commit it on main"
    )


def test_up_names_the_trunk_and_the_project(tmp_path: Path, up_factory: Any) -> None:
    """Without --trunk, the trunk is the repository's current branch, printed at start; a
    working-tree edit of loopbus.toml that was never committed is not what is read."""
    repo = scaffold.write(tmp_path / "calc")
    (repo / "loopbus.toml").write_text("[project\n")  # uncommitted and broken
    up = up_factory("--repo", str(repo), "--port", str(free_port()))
    assert any("trunk main at" in line and "project calc" in line for line in up.lines)
    assert any("loopbus tail --project calc" in line for line in up.lines)
    [warning] = [line for line in up.lines if "warning" in line]
    assert "loopbus.toml differs from the one on trunk (main)" in warning
    assert "commit the change there" in warning
    assert up.stop() == 0


def test_up_says_in_its_banner_that_agents_run_unsandboxed(tmp_path: Path, up_factory: Any) -> None:
    """[agents] sandbox = "none" on trunk: the banner warns that agents run unsandboxed."""
    repo = scaffold.write(tmp_path / "calc")
    with Repo(str(repo)) as opened:
        (repo / "loopbus.toml").write_text(scaffold.LOOPBUS_TOML + '\n[agents]\nsandbox = "none"\n')
        porcelain.add(opened, [str(repo / "loopbus.toml")])
        porcelain.commit(opened, b"no sandbox", author=b"a <a@x>", committer=b"a <a@x>")
    up = up_factory("--repo", str(repo), "--port", str(free_port()))
    [warning] = [line for line in up.lines if "UNSANDBOXED" in line]
    assert '[agents] sandbox = "none"' in warning and "standing finding" in warning
    assert up.stop() == 0


def test_a_bare_repository_works_the_same(tmp_path: Path, up_factory: Any) -> None:
    """A bare clone is served like its source: same trunk, same project."""
    source = scaffold.write(tmp_path / "calc")
    bare = tmp_path / "calc.git"
    porcelain.clone(str(source), str(bare), bare=True)
    up = up_factory("--repo", str(bare), "--port", str(free_port()))
    assert any("bare repository" in line and "project calc" in line for line in up.lines)
    assert not [line for line in up.lines if "warning" in line]
    assert up.stop() == 0


def test_only_a_real_difference_from_trunk_s_config_is_warned_of(tmp_path: Path) -> None:
    """The same file with CRLF endings (as git may hold it) is not a change; a different one
    is, and so is one trunk does not have at all."""
    (tmp_path / "loopbus.toml").write_bytes(b'[project]\r\nid = "p"\r\n')
    assert uncommitted_config(tmp_path, '[project]\r\nid = "p"\r\n', "main") == []
    assert uncommitted_config(tmp_path, '[project]\nid = "p"\n', "main") == []
    [changed] = uncommitted_config(tmp_path, '[project]\nid = "q"\n', "main")
    assert "differs from the one on trunk (main)" in changed
    [missing] = uncommitted_config(tmp_path, None, None)
    assert "is not on trunk;" in missing
    assert uncommitted_config(tmp_path / "elsewhere", None, "main") == []


def test_up_adopts_trunk_s_configuration_on_its_first_start_only(tmp_path: Path) -> None:
    """The first `up` on a project records trunk's loopbus.toml as the adopted
    configuration (the operator's act, before any daemon runs); a restart on the same log
    adds no second adoption and says which one judges trunk."""
    repo = scaffold.write(tmp_path / "calc")
    data = tmp_path / "data"
    with Repo(str(repo)) as opened:
        trunk = opened.refs[b"refs/heads/main"].decode()
    text = config_at(repo, trunk)
    first = start_up("--data-dir", str(data), "--repo", str(repo), "--port", str(free_port()))
    try:
        [said] = [line for line in first.lines if "adopted loopbus.toml" in line]
        assert trunk[:12] in said and "first start" in said
    finally:
        assert first.stop() == 0
    again = start_up("--data-dir", str(data), "--repo", str(repo), "--port", str(free_port()))
    try:
        assert not [line for line in again.lines if "adopted loopbus.toml" in line]
        assert any("trunk is judged by the loopbus.toml adopted" in x for x in again.lines)
        env = {"LOOPBUS_DATA_DIR": str(data)}
        shown = loopbus(
            "tail", "--project", "calc", "--kind", "config", "--no-follow", "--json",
            "--nats-url", again.url, env=env,
        )  # fmt: skip
        assert shown.code == 0, shown.err
        adopted = [e for e in shown.json_lines() if e["kind"] == "config.adopted.v1"]
    finally:
        assert again.stop() == 0
    [only] = adopted
    assert (only["why"], only["commit"], only["text"]) == ("first-start", trunk, text)
    assert only["actor"]["role"] == "system" and "@" in only["by"]


def config_at(repo: Path, commit: str) -> str:
    """``loopbus.toml`` as the commit holds it."""
    found = resolve(repo, commit).config_text
    assert found is not None
    return found
