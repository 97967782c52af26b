"""Reading the repository with dulwich: commits, trees, the config file, history, checkouts.

Computing a cache key needs no checkout: the tree id is in the commit, and a check that
declares the files it reads is keyed on a digest of just those entries. A run gets a
fresh checkout of the tree in a private temporary directory, which nothing else shares.
A unit's change (its diff against the trunk commit it branched from, who touched it, and
``loopbus.toml`` on both sides) is read here too, for the reviewer.

dulwich is blocking and its ``Repo`` is not meant for concurrent threads, so every helper
here opens its own ``Repo`` and the async callers run them in a worker thread.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import os
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dulwich.diff_tree import tree_changes
from dulwich.errors import NotGitRepository
from dulwich.graph import find_merge_base
from dulwich.objects import Blob, Commit, ObjectID, Tree
from dulwich.objectspec import parse_commit
from dulwich.patch import write_tree_diff
from dulwich.repo import Repo

from workers.errors import CONFIG_FILE, RepoError


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


def config_at(repo: Repo, tree: bytes) -> str | None:
    """The config file's text in ``tree`` of an open repository (``None`` when absent)."""
    return _config_text(repo, tree)


def _config_text(repo: Repo, tree: bytes) -> str | None:
    data = _config_bytes(repo, tree)
    return None if data is None else data.decode("utf-8", errors="replace")


def _config_bytes(repo: Repo, tree: bytes) -> bytes | None:
    """The config file's bytes in ``tree`` (``None`` when the tree has none)."""
    return blob_at(repo, tree, CONFIG_FILE)


def blob_at(repo: Repo, tree: bytes, path: str) -> bytes | None:
    """The bytes of file ``path`` in ``tree`` of an open ``repo`` (``None``: no such file)."""
    root = repo.object_store[ObjectID(tree)]
    if not isinstance(root, Tree):
        return None
    try:
        _mode, sha = root.lookup_path(repo.object_store.__getitem__, path.encode())
    except KeyError:
        return None
    blob = repo.object_store[sha]
    return blob.data if isinstance(blob, Blob) else None


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
        for entry in repo.object_store.iter_tree_contents(ObjectID(tree.encode())):
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
        for entry in store.iter_tree_contents(ObjectID(tree.encode())):
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


def overlay(path: Path, tree: str, paths: Sequence[str], dest: Path) -> None:
    """Make each of ``paths`` under the checkout ``dest`` exactly what it is in ``tree``:
    rewritten from it when ``tree`` has the file, removed when it does not (the gate
    runner swaps trunk's test infrastructure into a candidate's checkout this way)."""
    root = dest.resolve()
    with open_repo(path) as repo:
        store = repo.object_store
        top = store[ObjectID(tree.encode())]
        assert isinstance(top, Tree)
        for name in paths:
            parts = name.split("/")
            if any(p in ("", ".", "..", ".git") for p in parts):
                raise RepoError(f"refusing to overlay the unsafe path {name!r}")
            target = root.joinpath(*parts)
            inside = Path(os.path.realpath(target.parent))
            if inside != root and root not in inside.parents:
                raise RepoError(f"{name!r} lies behind a link out of the checkout; not swapped")
            if target.is_symlink() or target.is_file():
                target.unlink()
            elif target.is_dir():
                shutil.rmtree(target)
            try:
                mode, sha = top.lookup_path(store.__getitem__, name.encode())
            except KeyError:
                continue  # not in trunk's tree: the candidate added it, so it goes
            blob = store[sha]
            if not isinstance(blob, Blob):
                continue  # a folder or submodule in trunk: its own files are listed apart
            target.parent.mkdir(parents=True, exist_ok=True)
            if stat.S_ISLNK(mode):
                os.symlink(blob.data, target)
            else:
                target.write_bytes(blob.data)


# -- a unit's change: what the reviewer reads --------------------------------------------


@dataclass(frozen=True, slots=True)
class UnitChange:
    """A unit's work as the repository has it: its head against the trunk commit it
    branched from."""

    head: str
    base: str
    diff_text: str
    identities: frozenset[tuple[str, str]]
    """(name, email) of every author and committer of the commits in base..head."""
    config_before: bytes | None
    config_after: bytes | None
    tree: str = ""
    """The git tree of ``head``: what convergence compares rounds on (a tree cannot be made
    to look new by rebasing, as a diff against a moving base can)."""


def commit_at(repo: Repo, spec: str) -> Commit:
    """The commit ``spec`` (a sha, a short sha, a branch or tag) names in an open ``repo``."""
    try:
        commit = parse_commit(repo, spec)
    except (KeyError, ValueError) as exc:
        raise RepoError(f"{spec} names no commit in {repo.path}") from exc
    assert isinstance(commit, Commit)
    return commit


def tree_of(path: Path, spec: str) -> str:
    """The tree id of the commit ``spec`` names."""
    with open_repo(path) as repo:
        tree: bytes = commit_at(repo, spec).tree
        return tree.decode()


def trunk_commit(repo: Repo, trunk: str | None) -> Commit:
    """The trunk: the configured branch, else ``main``, else ``HEAD``."""
    for spec in [trunk] if trunk else ["main", "HEAD"]:
        try:
            return commit_at(repo, spec)
        except RepoError:
            continue
    raise RepoError(f"no trunk branch {trunk or 'main'} (nor HEAD) in {repo.path}")


def is_ancestor(repo: Repo, ancestor: ObjectID, commit: ObjectID) -> bool:
    return ancestor in find_merge_base(repo, [ancestor, commit])


def branch_point(repo: Repo, head: Commit, dispatched: str | None, trunk: str | None) -> ObjectID:
    """The trunk commit a unit's ``head`` branched from.

    The commit it was dispatched against when that is an ancestor of the head (the usual
    case) — or, when the unit has merged trunk in since (a conflict round's merge commit,
    whose second parent is a later trunk commit), the newest trunk commit so merged: the
    unit's change is what it adds to that, not what trunk brought in. Otherwise the merge
    base of the head and the current trunk.
    """
    if dispatched:
        try:
            base = commit_at(repo, dispatched)
            if is_ancestor(repo, base.id, head.id):
                return _merged_in(repo, head, base.id) or base.id
        except RepoError:
            pass
    trunk_head = trunk_commit(repo, trunk)
    bases = find_merge_base(repo, [head.id, trunk_head.id])
    if not bases:
        raise RepoError(f"{head.id.decode()} shares no history with the trunk")
    return bases[0]


def unit_base(path: Path, head: str, *, dispatched: str, trunk: str | None) -> str:
    """:func:`branch_point` of ``head`` in the repository at ``path``."""
    with open_repo(path) as repo:
        return branch_point(repo, commit_at(repo, head), dispatched, trunk).decode()


def _merged_in(repo: Repo, head: Commit, dispatched: ObjectID) -> ObjectID | None:
    """The trunk commit the newest merge on ``head``'s first-parent line brought in, when
    it descends from ``dispatched`` (``None``: the unit never merged trunk in)."""
    commit: Commit | None = head
    for _ in range(SIBLING_WALK):
        if commit is None or commit.id == dispatched:
            return None
        if len(commit.parents) == 2 and is_ancestor(repo, dispatched, commit.parents[1]):
            return commit.parents[1]
        commit = commit_of(repo, commit.parents[0].decode()) if commit.parents else None
    return None


def unit_change(
    path: str | Path, head: str, *, dispatched: str | None, trunk: str | None
) -> UnitChange:
    """The diff of ``head`` against its branch point, who touched base..head, and the
    config file on both sides."""
    with open_repo(Path(path)) as repo:
        head_commit = commit_at(repo, head)
        base = branch_point(repo, head_commit, dispatched, trunk)
        base_commit = commit_at(repo, base.decode())
        out = io.BytesIO()
        write_tree_diff(out, repo.object_store, base_commit.tree, head_commit.tree)
        identities: set[tuple[str, str]] = set()
        walker = repo.get_walker(include=[head_commit.id], exclude=[ObjectID(base)])
        for entry in walker:
            commit = entry.commit
            for who in (commit.author, commit.committer):
                identities.add(_identity(who))
        return UnitChange(
            head=head_commit.id.decode(),
            base=base.decode(),
            diff_text=out.getvalue().decode("utf-8", "replace"),
            identities=frozenset(identities),
            config_before=_config_bytes(repo, base_commit.tree),
            config_after=_config_bytes(repo, head_commit.tree),
            tree=head_commit.tree.decode(),
        )


def author_of(path: Path, sha: str) -> str:
    """``Name <email>`` of the author of commit ``sha``."""
    with open_repo(path) as repo:
        author: bytes = commit_of(repo, sha).author
        return author.decode("utf-8", "replace")


def changed_config(path: Path, old: str, new: str) -> list[str]:
    """The gate-configuration files (see ``gates.scope.config_touched``) that differ
    between commits ``old`` and ``new``."""
    from workers.gates.scope import config_touched

    with open_repo(path) as repo:
        trees = {"base": commit_of(repo, old).tree, "head": commit_of(repo, new).tree}
        paths = files_changed(path, old, new)
        return config_touched(paths, lambda side, name: blob_at(repo, trees[side], name))


def _identity(raw: bytes) -> tuple[str, str]:
    text = raw.decode("utf-8", "replace")
    name, _, rest = text.partition("<")
    return name.strip(), rest.rstrip(">").strip()


SIBLING_WALK = 200
"""Trunk commits walked back looking for where a unit branched."""


def unit_branch(project: str, unit: str) -> str:
    """A unit's branch in its project's repository (the builder writes it, closeout
    deletes it once its commits are on trunk)."""
    return f"loopbus/{project}/{unit}"


def commit_of(repo: Repo, sha: str) -> Commit:
    """The commit ``sha`` names; :class:`RepoError` when the repository has none."""
    try:
        obj = repo.object_store[ObjectID(sha.encode())]
    except (KeyError, ValueError) as exc:
        raise RepoError(f"commit {sha} is not in the repository") from exc
    if not isinstance(obj, Commit):
        raise RepoError(f"{sha} is a {obj.type_name.decode()}, not a commit")
    return obj
