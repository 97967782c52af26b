"""Reading the repository with dulwich: commits, trees, the config file, and checkouts.

Computing a cache key needs no checkout: the tree id is in the commit, and a check that
declares the files it reads is keyed on a digest of just those entries. A run gets a
fresh checkout of the tree in a private temporary directory, which nothing else shares.

dulwich is blocking and its ``Repo`` is not meant for concurrent threads, so every helper
here opens its own ``Repo`` and the async callers run them in a worker thread.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dulwich.diff_tree import tree_changes
from dulwich.errors import NotGitRepository
from dulwich.objects import Blob, Commit
from dulwich.objectspec import parse_commit
from dulwich.repo import Repo
from loopbus.workers.errors import CONFIG_FILE, RepoError


@dataclass(frozen=True)
class CommitInfo:
    """A resolved commit: its id, its tree id, and the config text it carries (if any)."""

    commit: str
    tree: str
    config_text: str | None


def open_repo(path: Path) -> Repo:
    try:
        return Repo(str(path))
    except (NotGitRepository, FileNotFoundError, NotADirectoryError) as exc:
        raise RepoError(f"--repo {path} is not a git repository (no .git found)") from exc


def resolve(path: Path, spec: str | None = None) -> CommitInfo:
    """``spec`` (a sha, a short sha, a branch or tag; ``HEAD`` when ``None``) as a CommitInfo."""
    with open_repo(path) as repo:
        try:
            commit = parse_commit(repo, spec or "HEAD")
        except (KeyError, ValueError) as exc:
            raise RepoError(f"--commit {spec or 'HEAD'} names no commit in {path}") from exc
        assert isinstance(commit, Commit)
        tree = commit.tree
        text = _config_text(repo, tree)
        return CommitInfo(commit=commit.id.decode(), tree=tree.decode(), config_text=text)


def _config_text(repo: Repo, tree: bytes) -> str | None:
    try:
        _mode, sha = repo.object_store[tree].lookup_path(  # type: ignore[union-attr]
            repo.object_store.__getitem__, CONFIG_FILE.encode()
        )
    except KeyError:
        return None
    blob = repo.object_store[sha]
    if not isinstance(blob, Blob):
        return None
    return blob.data.decode("utf-8", errors="replace")


def files_changed(path: Path, base: str, head: str) -> list[str]:
    """Paths that differ between the trees of commits ``base`` and ``head``, sorted."""
    with open_repo(path) as repo:
        try:
            old, new = repo[base.encode()], repo[head.encode()]
        except (KeyError, ValueError) as exc:
            raise RepoError(
                f"cannot diff {base[:12]}..{head[:12]}: no such commit in {path}"
            ) from exc
        if not isinstance(old, Commit) or not isinstance(new, Commit):
            raise RepoError(f"cannot diff {base[:12]}..{head[:12]}: not both commits")
        paths: set[str] = set()
        for change in tree_changes(repo.object_store, old.tree, new.tree):
            for side in (change.old, change.new):
                if side is not None and side.path is not None:
                    paths.add(side.path.decode("utf-8", errors="surrogateescape"))
        return sorted(paths)


def matches(path: str, reads: Sequence[str]) -> bool:
    """True when ``path`` is read by a check declaring ``reads``: ``*``, a folder prefix
    ending in ``/``, or an fnmatch glob over the whole path (``*`` also crosses ``/``)."""
    for pattern in reads:
        if pattern == "*" or (pattern.endswith("/") and path.startswith(pattern)):
            return True
        if fnmatch.fnmatchcase(path, pattern):
            return True
    return False


def inputs_digest(path: Path, tree: str, reads: Sequence[str]) -> str:
    """The content address a check's result is cached under: the tree id itself when the
    check reads everything, else ``reads:<sha256>`` over the paths, modes and blob ids it
    reads (so commits that differ only elsewhere share the result)."""
    if "*" in reads:
        return tree
    digest = hashlib.sha256()
    with open_repo(path) as repo:
        for entry in repo.object_store.iter_tree_contents(tree.encode()):
            name = entry.path.decode("utf-8", errors="surrogateescape")
            if matches(name, reads):
                digest.update(b"%s\0%o\0%s\n" % (entry.path, entry.mode, entry.sha))
    return f"reads:{digest.hexdigest()}"


def checkout(path: Path, tree: str, dest: Path) -> int:
    """Write every file of ``tree`` under ``dest`` (modes and symlinks kept); return the count.

    Paths are checked so that no entry can write outside ``dest``.
    """
    written = 0
    root = dest.resolve()
    with open_repo(path) as repo:
        store = repo.object_store
        for entry in store.iter_tree_contents(tree.encode()):
            name = entry.path.decode("utf-8", errors="surrogateescape")
            parts = name.split("/")
            if any(p in ("", ".", "..", ".git") for p in parts):
                raise RepoError(f"tree {tree} holds an unsafe path {name!r}; refusing to check out")
            target = root.joinpath(*parts)
            if stat.S_ISDIR(entry.mode) or entry.mode == 0o160000:  # a submodule: no content
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            blob = store[entry.sha]
            assert isinstance(blob, Blob)
            if stat.S_ISLNK(entry.mode):
                os.symlink(blob.data, target)
            else:
                target.write_bytes(blob.data)
                if entry.mode & 0o111:
                    target.chmod(0o755)
            written += 1
    return written
