"""What the reviewer reads from the repository with dulwich: the base a unit branched
from, the diff, who touched the unit's commits, and a read-only copy of its head.

dulwich is blocking, so the daemon calls these from a worker thread; each opens its own
``Repo``.
"""

from __future__ import annotations

import io
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from dulwich.graph import find_merge_base
from dulwich.objects import Blob, Commit
from dulwich.objectspec import parse_commit
from dulwich.patch import write_tree_diff
from dulwich.repo import Repo
from loopbus.workers.errors import CONFIG_FILE
from loopbus.workers.repository import checkout, open_repo
from loopbus.workers.reviewer.errors import RepoError


@dataclass(frozen=True, slots=True)
class UnitChange:
    """The unit's work as the repository has it."""

    head: str
    base: str
    diff_text: str
    identities: frozenset[tuple[str, str]]
    """(name, email) of every author and committer of the commits in base..head."""
    config_before: bytes | None
    config_after: bytes | None


def _commit(repo: Repo, spec: str) -> Commit:
    try:
        commit = parse_commit(repo, spec)
    except (KeyError, ValueError) as exc:
        raise RepoError(f"{spec} names no commit in {repo.path}") from exc
    assert isinstance(commit, Commit)
    return commit


def trunk_commit(repo: Repo, trunk: str | None) -> Commit:
    """The trunk: the configured branch, else ``main``, else ``HEAD``."""
    for spec in [trunk] if trunk else ["main", "HEAD"]:
        try:
            return _commit(repo, spec)
        except RepoError:
            continue
    raise RepoError(f"no trunk branch {trunk or 'main'} (nor HEAD) in {repo.path}")


def is_ancestor(repo: Repo, ancestor: bytes, commit: bytes) -> bool:
    return ancestor in find_merge_base(repo, [ancestor, commit])


def branch_point(repo: Repo, head: Commit, dispatched: str | None, trunk: str | None) -> bytes:
    """The trunk commit the unit branched from.

    The commit it was dispatched against when that is an ancestor of the head (the usual
    case); otherwise the merge base of the head and the current trunk.
    """
    if dispatched:
        try:
            base = _commit(repo, dispatched)
            if is_ancestor(repo, base.id, head.id):
                return base.id
        except RepoError:
            pass
    trunk_head = trunk_commit(repo, trunk)
    bases = find_merge_base(repo, [head.id, trunk_head.id])
    if not bases:
        raise RepoError(f"{head.id.decode()} shares no history with the trunk")
    return bases[0]


def unit_change(
    path: str | Path, head: str, *, dispatched: str | None, trunk: str | None
) -> UnitChange:
    with open_repo(Path(path)) as repo:
        head_commit = _commit(repo, head)
        base = branch_point(repo, head_commit, dispatched, trunk)
        base_commit = _commit(repo, base.decode())
        out = io.BytesIO()
        write_tree_diff(out, repo.object_store, base_commit.tree, head_commit.tree)
        identities: set[tuple[str, str]] = set()
        for entry in repo.get_walker(include=[head_commit.id], exclude=[base]):
            commit = entry.commit
            for who in (commit.author, commit.committer):
                identities.add(_identity(who))
        return UnitChange(
            head=head_commit.id.decode(),
            base=base.decode(),
            diff_text=out.getvalue().decode("utf-8", "replace"),
            identities=frozenset(identities),
            config_before=_blob(repo, base_commit.tree, CONFIG_FILE),
            config_after=_blob(repo, head_commit.tree, CONFIG_FILE),
        )


def _identity(raw: bytes) -> tuple[str, str]:
    text = raw.decode("utf-8", "replace")
    name, _, rest = text.partition("<")
    return name.strip(), rest.rstrip(">").strip()


def _blob(repo: Repo, tree: bytes, name: str) -> bytes | None:
    try:
        _mode, sha = repo.object_store[tree].lookup_path(  # type: ignore[union-attr]
            repo.object_store.__getitem__, name.encode()
        )
    except KeyError:
        return None
    blob = repo.object_store[sha]
    return blob.data if isinstance(blob, Blob) else None


def principal_matches(principal: str, identity: tuple[str, str]) -> bool:
    """A roster principal names a git identity when it equals (case-insensitively) its
    name, its e-mail address, or the part of the address before ``@``."""
    wanted = principal.strip().lower()
    name, email = (part.strip().lower() for part in identity)
    return wanted in {name, email, email.split("@", 1)[0]} - {""}


NOBODY = 65534
"""Owner of the copy when the daemon is root: an agent whose capabilities were dropped
(``command.drop_capabilities``) then owns nothing in it, so it can neither write nor chmod."""


def read_only_copy(path: str | Path, head: str, dest: Path) -> int:
    """Check ``head`` out under ``dest`` and make every file and folder read-only."""
    with open_repo(Path(path)) as repo:
        tree = _commit(repo, head).tree.decode()
    written = checkout(Path(path), tree, dest)
    as_root = os.geteuid() == 0
    for root, dirs, files in os.walk(dest, topdown=False):
        for name in files:
            target = Path(root, name)
            if not target.is_symlink():
                target.chmod(stat.S_IMODE(target.stat().st_mode) & 0o555)
            if as_root:
                os.lchown(target, NOBODY, NOBODY)
        for name in dirs:
            Path(root, name).chmod(0o555)
            if as_root:
                os.lchown(Path(root, name), NOBODY, NOBODY)
    dest.chmod(0o555)
    if as_root:
        os.lchown(dest, NOBODY, NOBODY)
    return written


def make_writable(dest: Path) -> None:
    """Undo :func:`read_only_copy` so the copy can be removed."""
    if not dest.exists():
        return
    dest.chmod(0o755)
    for root, dirs, files in os.walk(dest):
        for name in dirs:
            Path(root, name).chmod(0o755)
        for name in files:
            target = Path(root, name)
            if not target.is_symlink():
                target.chmod(0o644)
