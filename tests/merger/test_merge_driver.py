"""The driver in real repositories: dulwich's merge-driver registry and `git merge`."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from dulwich import porcelain
from dulwich.merge import three_way_merge
from dulwich.objects import Blob, Commit, ObjectID, Tree
from dulwich.refs import Ref
from dulwich.repo import Repo
from entity_merge_cases import LANGS, Scenario, scenarios

import workers
from workers.entity_merge import (
    DRIVER_NAME,
    EntityMergeDriver,
    entity_merge_attributes,
    merge_driver_registry,
    register_merge_driver,
    run_git_driver,
)

FALSE_CONFLICTS = [
    pytest.param(s, id=s.id) for lang in LANGS for s in scenarios(lang) if s.false_conflict
]
AUTHOR = b"Test Author <author@example.com>"
PROJECT_ROOT = Path(workers.__file__).resolve().parent.parent


# --- dulwich ---------------------------------------------------------------------------


def _commit(repo: Repo, files: dict[bytes, bytes], parents: list[ObjectID]) -> Commit:
    """A commit of a flat tree holding `files`, written straight to the object store."""
    tree = Tree()
    for name, data in files.items():
        blob = Blob.from_string(data)
        repo.object_store.add_object(blob)
        tree.add(name, 0o100644, blob.id)
    repo.object_store.add_object(tree)
    commit = Commit()
    commit.tree = tree.id
    commit.parents = parents
    commit.author = commit.committer = AUTHOR
    commit.author_time = commit.commit_time = 1_700_000_000
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = b"test\n"
    repo.object_store.add_object(commit)
    return commit


def _dulwich_merge(tmp_path: Path, s: Scenario, attributes: bytes) -> tuple[bytes, bool]:
    name = os.path.basename(s.lang.path).encode()
    extra = {b".gitattributes": attributes}
    repo = Repo.init(str(tmp_path))
    base = _commit(repo, {name: s.base, **extra}, [])
    ours = _commit(repo, {name: s.ours, **extra}, [base.id])
    theirs = _commit(repo, {name: s.theirs, **extra}, [base.id])
    tree, conflicts = three_way_merge(
        repo.object_store,
        base,
        ours,
        theirs,
        gitattributes=repo.get_gitattributes(tree=ours.tree),
        config=repo.get_config(),
    )
    _, blob_id = tree[name]
    blob = repo.object_store[blob_id]
    assert isinstance(blob, Blob)
    return blob.data, not conflicts


@pytest.mark.usefixtures("fresh_registry")
@pytest.mark.parametrize("s", FALSE_CONFLICTS)
def test_dulwich_merge_uses_the_registered_driver_for_gitattributes_paths(
    tmp_path: Path, s: Scenario
) -> None:
    """With `merge=loopbus` in .gitattributes, dulwich merges a false conflict cleanly.

    Only the entity merge can produce the expected file here: a line merge (git's, see
    the git tests below) conflicts on these inputs.
    """
    register_merge_driver()
    ext = os.path.splitext(s.lang.path)[1]
    content, clean = _dulwich_merge(
        tmp_path, s, attributes=f"*{ext} merge={DRIVER_NAME}\n".encode()
    )
    assert clean
    assert content == s.expected


@pytest.mark.usefixtures("fresh_registry")
def test_porcelain_merge_of_two_branches_uses_the_driver(tmp_path: Path) -> None:
    """A full dulwich porcelain merge commits the entity-merged file with no conflict."""
    s = next(s for s in scenarios(LANGS[0]) if s.kind == "add-at-same-anchor")
    register_merge_driver()
    path = tmp_path / "repo"
    repo = Repo.init(str(path), mkdir=True)
    (path / ".gitattributes").write_bytes(b"*.py merge=loopbus\n")
    (path / "cart.py").write_bytes(s.base)
    porcelain.add(repo, [str(path / ".gitattributes"), str(path / "cart.py")])
    base = porcelain.commit(repo, message=b"base", author=AUTHOR, committer=AUTHOR)
    theirs = _commit(
        repo, {b".gitattributes": b"*.py merge=loopbus\n", b"cart.py": s.theirs}, [ObjectID(base)]
    )
    repo.refs[Ref(b"refs/heads/theirs")] = theirs.id
    (path / "cart.py").write_bytes(s.ours)
    porcelain.add(repo, [str(path / "cart.py")])
    porcelain.commit(repo, message=b"ours", author=AUTHOR, committer=AUTHOR)

    merge_commit, conflicts = porcelain.merge(
        repo, b"theirs", message=b"merge", author=AUTHOR, committer=AUTHOR
    )
    assert conflicts == []
    assert merge_commit is not None
    assert (path / "cart.py").read_bytes() == s.expected


@pytest.mark.usefixtures("fresh_registry")
def test_default_attributes_route_supported_files_without_a_gitattributes_file(
    tmp_path: Path,
) -> None:
    """`entity_merge_attributes()` sends files to the driver with no .gitattributes at all."""
    register_merge_driver()
    s = next(s for s in scenarios(LANGS[3]) if s.kind == "imports-added")
    name = os.path.basename(s.lang.path).encode()
    repo = Repo.init(str(tmp_path), mkdir=False)
    base = _commit(repo, {name: s.base}, [])
    ours = _commit(repo, {name: s.ours}, [base.id])
    theirs = _commit(repo, {name: s.theirs}, [base.id])
    tree, conflicts = three_way_merge(
        repo.object_store, base, ours, theirs, gitattributes=entity_merge_attributes()
    )
    assert conflicts == []
    blob = repo.object_store[tree[name][1]]
    assert isinstance(blob, Blob) and blob.data == s.expected


@pytest.mark.usefixtures("fresh_registry")
def test_default_attributes_line_merge_files_without_a_grammar(tmp_path: Path) -> None:
    """A Markdown file edited apart by both sides merges through the driver's line merge.

    dulwich's own text merge needs the optional merge3 package; routing every path
    through the driver means the merger never depends on it.
    """
    register_merge_driver()
    repo = Repo.init(str(tmp_path), mkdir=False)
    text = b"# Title\n\none\ntwo\nthree\nfour\nfive\n"
    base = _commit(repo, {b"README.md": text}, [])
    ours = _commit(repo, {b"README.md": text.replace(b"one", b"ONE")}, [base.id])
    theirs = _commit(repo, {b"README.md": text.replace(b"five", b"FIVE")}, [base.id])
    tree, conflicts = three_way_merge(
        repo.object_store, base, ours, theirs, gitattributes=entity_merge_attributes()
    )
    assert conflicts == []
    blob = repo.object_store[tree[b"README.md"][1]]
    assert isinstance(blob, Blob)
    assert blob.data == text.replace(b"one", b"ONE").replace(b"five", b"FIVE")


def test_a_repository_attribute_overrides_the_default_route() -> None:
    """A repository naming another driver for a path wins over the default route."""
    from dulwich.attrs import GitAttributes, Pattern

    repository = GitAttributes([(Pattern(b"vendor/*.py"), {b"merge": b"ours"})])
    attributes = entity_merge_attributes(repository)
    assert attributes.match_path(b"src/app.py")[b"merge"] == b"loopbus"
    assert attributes.match_path(b"README.md")[b"merge"] == b"loopbus"
    assert attributes.match_path(b"vendor/lib.py")[b"merge"] == b"ours"


def test_a_private_registry_holds_the_driver_under_its_name() -> None:
    """`merge_driver_registry()` returns a registry whose `loopbus` driver merges entities."""
    driver = merge_driver_registry().get_driver(DRIVER_NAME)
    assert isinstance(driver, EntityMergeDriver)
    s = next(s for s in scenarios(LANGS[1]) if s.kind == "add-at-end")
    assert driver.merge(s.base, s.ours, s.theirs, path=s.lang.path) == (s.expected, True)


# --- git ---------------------------------------------------------------------------------


def _git_env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.com",
        # The driver runs as `python -m workers.entity_merge`, from the repo root.
        "PYTHONPATH": str(PROJECT_ROOT),
    }


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", *args],
        cwd=repo,
        env=_git_env(repo.parent),
        capture_output=True,
        check=check,
        timeout=60,
    )


def _branches(repo: Path, s: Scenario) -> Path:
    """A repo with `main` (ours) and `theirs` forked from a base commit of `s`."""
    repo.mkdir()
    target = repo / s.lang.path
    target.parent.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    target.write_bytes(s.base)
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    _git(repo, "checkout", "-q", "-b", "theirs")
    target.write_bytes(s.theirs)
    _git(repo, "commit", "-q", "-am", "theirs")
    _git(repo, "checkout", "-q", "main")
    target.write_bytes(s.ours)
    _git(repo, "commit", "-q", "-am", "ours")
    return target


@pytest.mark.parametrize("s", FALSE_CONFLICTS)
def test_git_merge_with_the_driver_resolves_what_plain_git_merge_conflicts_on(
    tmp_path: Path, s: Scenario
) -> None:
    """`git merge` conflicts without the driver and merges cleanly to the expected file with it."""
    plain = tmp_path / "plain"
    _branches(plain, s)
    assert _git(plain, "merge", "-q", "--no-edit", "theirs", check=False).returncode != 0

    repo = tmp_path / "driver"
    target = _branches(repo, s)
    command = f"{shlex.quote(sys.executable)} -m workers.entity_merge %O %A %B %P"
    _git(repo, "config", f"merge.{DRIVER_NAME}.driver", command)
    ext = os.path.splitext(s.lang.path)[1]
    (repo / ".git" / "info" / "attributes").write_text(f"*{ext} merge={DRIVER_NAME}\n")
    merged = _git(repo, "merge", "-q", "--no-edit", "theirs", check=False)
    assert merged.returncode == 0, merged.stderr.decode()
    assert target.read_bytes() == s.expected


def test_git_merge_with_the_driver_still_stops_on_a_real_conflict(tmp_path: Path) -> None:
    """A same-line collision stays a conflict under git, with markers naming the function."""
    s = next(s for s in scenarios(LANGS[3]) if s.kind == "modify-a-same-line")
    repo = tmp_path / "repo"
    target = _branches(repo, s)
    command = f"{shlex.quote(sys.executable)} -m workers.entity_merge %O %A %B %P"
    _git(repo, "config", f"merge.{DRIVER_NAME}.driver", command)
    (repo / ".git" / "info" / "attributes").write_text(f"*.go merge={DRIVER_NAME}\n")
    merged = _git(repo, "merge", "-q", "--no-edit", "theirs", check=False)
    assert merged.returncode != 0
    assert f"<<<<<<< ours ({s.conflict_entity})".encode() in target.read_bytes()


# --- run_git_driver ---------------------------------------------------------------------


def _files(tmp_path: Path, s: Scenario) -> list[str]:
    paths = []
    for name, data in (("base", s.base), ("ours", s.ours), ("theirs", s.theirs)):
        (tmp_path / name).write_bytes(data)
        paths.append(str(tmp_path / name))
    return paths


def test_run_git_driver_writes_a_clean_merge_into_ours_and_returns_0(tmp_path: Path) -> None:
    """Exit 0 and %A holds the merged file."""
    s = next(s for s in scenarios(LANGS[2]) if s.kind == "add-at-end")
    base, ours, theirs = _files(tmp_path, s)
    assert run_git_driver([base, ours, theirs, s.lang.path]) == 0
    assert Path(ours).read_bytes() == s.expected


def test_run_git_driver_returns_1_and_names_the_entity_on_conflict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 1, markers in %A, and one stderr line per conflict naming the entity."""
    s = next(s for s in scenarios(LANGS[0]) if s.kind == "modify-delete")
    base, ours, theirs = _files(tmp_path, s)
    assert run_git_driver([base, ours, theirs, s.lang.path, "9"]) == 1
    assert f"<<<<<<<<< ours ({s.conflict_entity})".encode() in Path(ours).read_bytes()
    assert capsys.readouterr().err == (
        f"loopbus merge-driver: {s.lang.path}: conflict in {s.conflict_entity} (modify-delete)\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param([], "expected 4 or 5 arguments, got 0", id="no-arguments"),
        pytest.param(["a", "b", "c"], "expected 4 or 5 arguments, got 3", id="too-few"),
        pytest.param(["a", "b", "c", "p.py", "x"], "MARKER_SIZE must be", id="bad-marker-size"),
        pytest.param(["missing", "b", "c", "p.py"], "cannot read missing", id="unreadable"),
    ],
)
def test_run_git_driver_rejects_bad_arguments_with_one_line_and_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    message: str,
) -> None:
    """Bad arguments print exactly one line, with the usage, and exit 2."""
    monkeypatch.chdir(tmp_path)
    assert run_git_driver(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"loopbus merge-driver: {message}")
    assert "usage: loopbus merge-driver BASE OURS THEIRS PATH" in err


@pytest.mark.parametrize(
    "module",
    [
        pytest.param("workers.entity_merge", id="shared-library"),
        pytest.param("workers.merger.entity_merge", id="its-name-inside-the-merger"),
    ],
)
def test_module_entry_point_runs_the_git_driver(module: str, tmp_path: Path) -> None:
    """`python -P -m workers.entity_merge` is the driver, exit codes included, even run in
    a repository holding a `workers/` package of its own (git runs the driver in the
    repository's root; the decoy raises if imported)."""
    (tmp_path / "workers").mkdir()
    (tmp_path / "workers" / "__init__.py").write_text("raise SystemExit('decoy imported')\n")
    done = subprocess.run(
        [sys.executable, "-P", "-m", module],
        capture_output=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        check=False,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(b"loopbus merge-driver: expected 4 or 5 arguments")
