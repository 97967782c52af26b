"""What the merger writes to a repository, with dulwich only (no ``git`` subprocess).

Merging a unit's head into trunk, writing merge, revert and restore commits, and moving the
trunk ref with a compare-and-swap; the evidence of a conflict is gathered with the merge.
Reading (refs, trailers, the sibling diff, merge bases) is :mod:`workers.repository`'s.

Every file merge goes through the tree-sitter entity merge driver: it is registered in
dulwich's process-wide merge-driver registry and every path is routed to it (the
repository's own ``merge`` attributes and configured driver commands are not consulted,
so no repository can make the merger run a command).

dulwich's ``Repo`` is blocking and not meant to be shared between threads, so each
function opens its own and async callers run them with ``asyncio.to_thread``.
"""

from __future__ import annotations

import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from dulwich import porcelain
from dulwich.merge import Merger, recursive_merge
from dulwich.objects import Blob, Commit, ObjectID, Tree
from dulwich.refs import Ref
from dulwich.repo import Repo

from workers.entity_merge import (
    entity_merge_attributes,
    merge_file,
    register_merge_driver,
)
from workers.errors import RepoError
from workers.history import merge_bases, ref_name
from workers.remote import mirror_of
from workers.repository import commit_of, open_repo

log = structlog.get_logger()

IDENTITY = b"loopbus merger <merger@loopbus.invalid>"
TEXT_CAP = 4000
"""Characters kept of one side of one conflicting hunk."""


@dataclass(frozen=True)
class ConflictFile:
    """One path the merge could not resolve, with the evidence an author needs."""

    path: str
    reason: str
    entities: list[dict[str, Any]]
    start: int = 1
    end: int = 1

    def as_evidence(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason, "entities": self.entities}


@dataclass(frozen=True)
class MergeAttempt:
    """A merge of ``theirs`` (a unit's head) into ``ours`` (trunk, or a candidate)."""

    ours: str
    theirs: str
    base: str | None
    commit: str | None = None
    tree: str | None = None
    conflicts: list[ConflictFile] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return self.commit is not None


def merge(path: Path, ours: str, theirs: str, message: str) -> MergeAttempt:
    """Merge ``theirs`` into ``ours``; on success write the merge commit (parents ours,
    theirs) without moving any ref. On a conflict nothing is written."""
    register_merge_driver()
    with open_repo(path) as repo:
        ours_commit, theirs_commit = commit_of(repo, ours), commit_of(repo, theirs)
        bases = merge_bases(repo, ours_commit.id, theirs_commit.id)
        base = bases[0].decode() if bases else None
        attributes = entity_merge_attributes()
        merger = Merger(repo.object_store, attributes, None)
        tree, conflicted = recursive_merge(
            repo.object_store,
            list(bases),
            ours_commit,
            theirs_commit,
            gitattributes=attributes,
            config=None,
            merger=merger,
        )
        if conflicted:
            files = [
                _conflict_file(repo, p.decode("utf-8", "replace"), merger.conflict_info.get(p))
                for p in conflicted
            ]
            return MergeAttempt(ours=ours, theirs=theirs, base=base, conflicts=files)
        repo.object_store.add_object(tree)
        commit = _write_commit(repo, tree.id, [ours_commit.id, theirs_commit.id], message)
        return MergeAttempt(
            ours=ours, theirs=theirs, base=base, commit=commit, tree=tree.id.decode()
        )


def revert(
    path: Path, trunk: str, merge_commit: str, fallback_tree: str | None, message: str
) -> tuple[str, str]:
    """Write a commit on top of ``trunk`` that undoes ``merge_commit``; return (commit, tree).

    The undo is a three-way merge (base: the merge, ours: trunk, theirs: the merge's first
    parent), so it also works when trunk moved past the merge. Should that collide,
    trunk goes back to ``fallback_tree`` (the last tree known green). Nothing is moved.
    """
    register_merge_driver()
    with open_repo(path) as repo:
        current = commit_of(repo, trunk)
        merged = commit_of(repo, merge_commit)
        if current.id == merged.id and merged.parents:
            tree_id = commit_of(repo, merged.parents[0].decode()).tree
        elif merged.parents:
            parent = commit_of(repo, merged.parents[0].decode())
            merger = Merger(repo.object_store, entity_merge_attributes(), None)
            tree, conflicted = merger.merge_trees(
                _tree(repo, merged.tree), _tree(repo, current.tree), _tree(repo, parent.tree)
            )
            if conflicted:
                if fallback_tree is None:
                    raise RepoError(f"cannot revert {merge_commit}: it collides with trunk")
                tree_id = ObjectID(fallback_tree.encode())
            else:
                repo.object_store.add_object(tree)
                tree_id = tree.id
        elif fallback_tree is not None:
            tree_id = ObjectID(fallback_tree.encode())
        else:
            raise RepoError(f"cannot revert root commit {merge_commit}: no green tree known")
        commit = _write_commit(repo, tree_id, [current.id], message)
        return commit, tree_id.decode()


def restore(path: Path, trunk: str, tree: str, message: str) -> str:
    """Write a commit on top of ``trunk`` whose tree is ``tree`` (an earlier green trunk)."""
    with open_repo(path) as repo:
        return _write_commit(repo, ObjectID(tree.encode()), [commit_of(repo, trunk).id], message)


def move(path: Path, trunk: str, old: str | None, new: str) -> bool:
    """Point ``trunk`` at ``new`` if it still points at ``old`` (``None``: does not exist).

    When trunk is the branch checked out in a working tree, the tree follows (see
    :func:`follow_checkout`), so ``git status`` never shows the merge as phantom reverts.
    When ``path`` mirrors a remote, the swap is a push naming ``old`` (two mergers cannot
    both move it; the loser's mirror is fetched, so its next look sees the winner's trunk).
    """
    mirror = mirror_of(path)
    if mirror is not None:
        return mirror.advance(trunk, old, new)
    with open_repo(path) as repo:
        name = ref_name(trunk)
        note = b"loopbus merger: " + new.encode()[:12]
        if old is None:
            moved = bool(repo.refs.add_if_new(name, ObjectID(new.encode()), message=note))
        else:
            old_id, new_id = ObjectID(old.encode()), ObjectID(new.encode())
            moved = bool(repo.refs.set_if_equals(name, old_id, new_id, message=note))
        if moved:
            follow_checkout(repo, name, new)
        return moved


def follow_checkout(repo: Repo, name: bytes, new: str) -> bool:
    """Bring a checked-out trunk's index and files to ``new``; True when it did.

    Only when the working tree was clean (nothing staged, nothing modified): a person's
    uncommitted edits are never overwritten; they then see the merge as changes to commit
    or discard, as after any fetch into a checked-out branch.
    """
    if repo.bare or repo.refs.get_symrefs().get(Ref(b"HEAD")) != name:
        return False
    state = porcelain.status(repo, untracked_files="no")
    staged = any(state.staged[kind] for kind in ("add", "delete", "modify"))
    # The index still describes the old trunk: against the new HEAD every merged file
    # reads as staged, so "clean" means the files on disk equal the index.
    if state.unstaged:
        log.warning("merger.checkout_dirty", files=len(state.unstaged), staged=staged)
        return False
    porcelain.reset(repo, "hard", new.encode())
    return True


# -- internals ---------------------------------------------------------------------------


def _tree(repo: Repo, sha: ObjectID) -> Tree:
    obj = repo.object_store[sha]
    assert isinstance(obj, Tree)
    return obj


def _write_commit(repo: Repo, tree: ObjectID, parents: list[ObjectID], message: str) -> str:
    commit = Commit()
    commit.tree = tree
    commit.parents = parents
    commit.author = commit.committer = IDENTITY
    commit.author_time = commit.commit_time = int(time.time())
    commit.author_timezone = commit.commit_timezone = 0
    commit.encoding = b"UTF-8"
    commit.message = message.encode()
    repo.object_store.add_object(commit)
    return commit.id.decode()


def _blob_data(repo: Repo, side: tuple[int | None, bytes | None] | None) -> bytes | None:
    if side is None or side[1] is None or side[0] is None:
        return None
    if stat.S_ISDIR(side[0]) or side[0] == 0o160000:
        return None
    obj = repo.object_store[ObjectID(side[1])]
    return obj.data if isinstance(obj, Blob) else None


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", errors="replace")


def _conflict_file(repo: Repo, path: str, info: Any) -> ConflictFile:
    """Evidence for one conflicted path: the entities that collide and their hunks."""
    if info is None:
        return ConflictFile(path=path, reason="unknown", entities=[])
    base = _blob_data(repo, info.ancestor)
    ours = _blob_data(repo, info.ours)
    theirs = _blob_data(repo, info.theirs)
    kinds = [side[0] for side in (info.ours, info.theirs) if side[0] is not None]
    if any(stat.S_ISDIR(mode) or mode == 0o160000 for mode in kinds):
        return ConflictFile(path=path, reason="type", entities=[])
    if ours is not None and theirs is not None:
        result = merge_file(base or b"", ours, theirs, path)
        entities: list[dict[str, Any]] = [
            {
                "kind": conflict.kind,
                "name": conflict.name,
                "reason": conflict.reason,
                "hunks": [_hunk(h.base, h.ours, h.theirs) for h in conflict.hunks],
            }
            for conflict in result.conflicts
        ]
        if not entities:  # the contents merge; the modes do not
            return ConflictFile(path=path, reason="mode", entities=[])
        first = result.conflicts[0].hunks
        start, end = _lines_in(theirs, first[0].theirs if first else "")
        return ConflictFile(
            path=path, reason=entities[0]["reason"], entities=entities, start=start, end=end
        )
    # One side deleted what the other changed: the survivor is the evidence.
    reason = "modify-delete" if theirs is None else "delete-modify"
    entity = {
        "kind": "file",
        "name": path,
        "reason": reason,
        "hunks": [_hunk(*(_text(side) for side in (base, ours, theirs)))],
    }
    return ConflictFile(path=path, reason=reason, entities=[entity])


def _hunk(base: str, ours: str, theirs: str) -> dict[str, str]:
    return {"base": _cap(base), "ours": _cap(ours), "theirs": _cap(theirs)}


def _cap(text: str) -> str:
    return text if len(text) <= TEXT_CAP else text[:TEXT_CAP] + "\n[... truncated]"


def _lines_in(content: bytes, text: str) -> tuple[int, int]:
    """The 1-based line range ``text`` occupies in ``content`` (1-1 when not found)."""
    data = content.decode("utf-8", errors="replace")
    at = data.find(text) if text else -1
    if at < 0:
        return 1, 1
    start = data.count("\n", 0, at) + 1
    return start, max(start, start + text.rstrip("\n").count("\n"))
