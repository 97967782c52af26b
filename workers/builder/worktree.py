"""A unit's private worktree, and the commit the adapter (never the agent) makes from it.

The worktree is a checkout of the round's start commit on the unit's branch, with a small
``.git`` of its own (:mod:`.gitdir`) so an agent's ``git status`` and ``git diff`` work;
the agent edits it freely. When it ends, :func:`commit_worktree` writes the directory's
files as a tree straight into the project's repository (bare or not: only its object store
and one ref are touched, never a working tree), makes a commit on top of the start commit
(and, in a conflict round, trunk's head as second parent) with the builder principal as
author, and points the branch ``loopbus/<project>/<unit>`` at it. So the commit is
reachable in the repository the daemons read, and nothing the agent did to ``.git`` files
can reach it: every ``.git`` is skipped, and the parents are the daemon's, not ``HEAD``'s.

Blocking (dulwich and the file system): the daemon calls these from a worker thread.
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from collections.abc import Iterable
from pathlib import Path

from dulwich.file import FileLocked
from dulwich.ignore import IgnoreFilter, read_ignore_patterns
from dulwich.objects import Blob, Commit, ObjectID, Tree

from workers.builder import gitdir
from workers.errors import RepoError
from workers.history import ref_name
from workers.repository import commit_at, open_repo, unit_branch

ALWAYS_IGNORED = frozenset({".git", "__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache"})
"""Never part of a unit's commit, whatever the project's ``.gitignore`` says."""

COMMITTER = b"loopbus builder adapter <builder@loopbus.invalid>"


def branch(project: str, unit: str) -> str:
    """The unit's branch in the project's repository."""
    return unit_branch(project, unit)


def prepare(repo: Path, start: str, dest: Path, *, branch: str) -> None:
    """A fresh checkout of ``start`` on ``branch`` at ``dest`` (whatever was there is
    removed first), ``dest`` itself 0700: no agent but the one it is lent to may list it."""
    fresh(dest)
    gitdir.make(repo, dest, branch=branch, head=start)


def fresh(dest: Path) -> None:
    """``dest`` empty, made anew, 0700."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    dest.chmod(0o700)


def read_file(repo: Path, commit: str, path: str) -> str:
    """The text of ``path`` at ``commit`` ('' when absent or not text)."""
    with open_repo(repo) as opened:
        try:
            tree = opened.object_store[commit_at(opened, commit).tree]
            assert isinstance(tree, Tree)
            _mode, sha = tree.lookup_path(opened.object_store.__getitem__, path.encode())
            blob = opened.object_store[sha]
        except (KeyError, RepoError):
            return ""
        return blob.data.decode("utf-8", "replace") if isinstance(blob, Blob) else ""


def commit_worktree(
    repo: Path,
    worktree: Path,
    *,
    parent: str,
    author: str,
    message: str,
    ref: str,
    merged: str | None = None,
) -> str | None:
    """Commit ``worktree``'s files on ``parent`` and point ``ref`` at it; ``None`` when the
    files are exactly ``parent``'s tree (the agent changed nothing). With ``merged`` (a
    conflict round: trunk's head) the commit is the merge of it into ``parent``, made even
    when the files equal ``parent``'s (the second parent is the change)."""
    ignore = _ignore(worktree)
    with open_repo(repo) as opened:
        store = opened.object_store
        parent_commit = commit_at(opened, parent)
        tree_id = _write_tree(store, worktree, "", ignore)
        if tree_id == parent_commit.tree and merged is None:
            opened.refs[ref_name(ref)] = parent_commit.id
            return None
        commit = Commit()
        commit.tree = tree_id
        commit.parents = [parent_commit.id]
        if merged is not None:
            commit.parents.append(commit_at(opened, merged).id)
        commit.author = author.encode()
        commit.committer = COMMITTER
        commit.commit_time = commit.author_time = int(time.time())
        commit.commit_timezone = commit.author_timezone = 0
        commit.message = message.encode()
        store.add_object(commit)
        opened.refs[ref_name(ref)] = commit.id
        return str(commit.id.decode())


def changed_paths(repo: Path, old: str, new: str) -> list[str]:
    """Files that differ between two commits (added, removed or modified)."""
    from workers.repository import files_changed

    return files_changed(repo, old, new)


def _ignore(worktree: Path) -> IgnoreFilter:
    patterns: Iterable[bytes] = ()
    gitignore = worktree / ".gitignore"
    if gitignore.is_file():
        with open(gitignore, "rb") as handle:
            patterns = list(read_ignore_patterns(handle))
    return IgnoreFilter(patterns)


def _write_tree(store: object, root: Path, prefix: str, ignore: IgnoreFilter) -> ObjectID:
    tree = Tree()
    for entry in sorted(os.scandir(root / prefix if prefix else root), key=lambda e: e.name):
        if entry.name in ALWAYS_IGNORED:
            continue
        relative = f"{prefix}{entry.name}"
        is_dir = entry.is_dir(follow_symlinks=False)
        if ignore.is_ignored(relative + ("/" if is_dir else "")):
            continue
        if is_dir:
            sub = _write_tree(store, root, relative + "/", ignore)
            if sub != Tree().id:  # git keeps no empty directories
                tree.add(entry.name.encode(), stat.S_IFDIR, sub)
            continue
        if entry.is_symlink():
            blob = Blob.from_string(os.readlink(entry.path).encode())
            mode = stat.S_IFLNK
        elif entry.is_file(follow_symlinks=False):
            blob = Blob.from_string(Path(entry.path).read_bytes())
            executable = entry.stat(follow_symlinks=False).st_mode & 0o111
            mode = 0o100755 if executable else 0o100644
        else:
            continue  # sockets, fifos: not content
        add_object(store, blob)
        tree.add(entry.name.encode(), mode, blob.id)
    if tree.items():  # an empty directory leaves no object behind
        add_object(store, tree)
    return tree.id


LOCKED_WAIT_S = 10.0


def add_object(store: object, obj: Blob | Tree) -> None:
    """Add ``obj`` to ``store``, when another writer holds its lock waiting until it is in.

    Rounds of one project run in threads at once, and two of them often write the same
    object (the same new content of a file): dulwich refuses the
    second with ``FileLocked`` while the first writes it. An object is named by its
    content, so what the other writer is writing is exactly this object; in the 100-project
    benchmark three rounds failed on that refusal, and their units never merged
    (docs/performance.md)."""
    try:
        store.add_object(obj)  # type: ignore[attr-defined]
        return
    except FileLocked:
        pass
    deadline = time.monotonic() + LOCKED_WAIT_S
    while time.monotonic() < deadline:
        if obj.id in store:  # type: ignore[operator]
            return
        time.sleep(0.05)
    store.add_object(obj)  # type: ignore[attr-defined]  # a stale lock: its error, as before
