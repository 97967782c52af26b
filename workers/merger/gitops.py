"""Everything the merger does to a repository, with dulwich only (no ``git`` subprocess).

Merging a unit's head into trunk, writing merge and revert commits, moving the trunk ref
with a compare-and-swap, and reading back what a commit says about itself (its trailers)
and what trunk gained since a unit branched (the sibling diff).

Every file merge goes through the tree-sitter entity merge driver: it is registered in
dulwich's process-wide merge-driver registry and every path is routed to it (the
repository's own ``merge`` attributes and configured driver commands are not consulted,
so no repository can make the merger run a command).

dulwich's ``Repo`` is blocking and not meant to be shared between threads, so each
function opens its own and async callers run them with ``asyncio.to_thread``.
"""

from __future__ import annotations

import hashlib
import io
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dulwich.errors import NotGitRepository
from dulwich.graph import can_fast_forward, find_merge_base
from dulwich.merge import Merger, recursive_merge
from dulwich.objects import Blob, Commit, Tree
from dulwich.patch import write_tree_diff
from dulwich.repo import Repo
from loopbus.workers.merger.entity_merge import (
    entity_merge_attributes,
    merge_file,
    register_merge_driver,
)

IDENTITY = b"loopbus merger <merger@loopbus.invalid>"
TEXT_CAP = 4000
"""Characters kept of one side of one conflicting hunk."""
DIFF_CAP = 20000
"""Characters of a sibling diff carried in a finding (its digest covers all of it)."""
SIBLING_WALK = 200
"""Trunk commits walked back looking for where a unit branched."""

_TRAILER = re.compile(r"^(Loopbus-[A-Za-z-]+):\s*(\S.*)$")


class RepoProblem(Exception):
    """The repository cannot be used: not a repository, no such ref or commit."""


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


@dataclass(frozen=True)
class Siblings:
    """What trunk gained between where a unit branched (``base``) and ``onto``."""

    base: str | None
    onto: str
    units: list[str]
    commits: list[str]
    diff: str
    digest: str
    truncated: bool

    def as_evidence(self) -> dict[str, Any]:
        return {
            "branched_from": self.base,
            "trunk": self.onto,
            "units": self.units,
            "commits": self.commits,
            "diff": self.diff,
            "diff_digest": self.digest,
            "diff_truncated": self.truncated,
        }


def open_repo(path: Path) -> Repo:
    try:
        return Repo(str(path))
    except (NotGitRepository, FileNotFoundError, NotADirectoryError) as exc:
        raise RepoProblem(f"--repo {path} is not a git repository") from exc


def ref_name(trunk: str) -> bytes:
    """``main`` -> ``refs/heads/main``; a full ``refs/...`` name is kept."""
    return trunk.encode() if trunk.startswith("refs/") else b"refs/heads/" + trunk.encode()


def read_ref(path: Path, trunk: str) -> str | None:
    """The commit ``trunk`` points at, or ``None`` when the branch does not exist."""
    with open_repo(path) as repo:
        try:
            return repo.refs[ref_name(trunk)].decode()
        except KeyError:
            return None


def has_commit(path: Path, sha: str) -> bool:
    with open_repo(path) as repo:
        try:
            return isinstance(repo.object_store[sha.encode()], Commit)
        except (KeyError, ValueError):
            return False


def tree_of(path: Path, sha: str) -> str:
    with open_repo(path) as repo:
        return _commit(repo, sha).tree.decode()


def trailers(path: Path, sha: str) -> dict[str, str]:
    """The ``Loopbus-*`` trailers of a commit's message (what the merger wrote there)."""
    with open_repo(path) as repo:
        message = _commit(repo, sha).message.decode("utf-8", errors="replace")
    found: dict[str, str] = {}
    for line in message.splitlines():
        match = _TRAILER.match(line.strip())
        if match:
            found[match.group(1)] = match.group(2).strip()
    return found


def merge(path: Path, ours: str, theirs: str, message: str) -> MergeAttempt:
    """Merge ``theirs`` into ``ours``; on success write the merge commit (parents ours,
    theirs) without moving any ref. On a conflict nothing is written."""
    register_merge_driver()
    with open_repo(path) as repo:
        ours_commit, theirs_commit = _commit(repo, ours), _commit(repo, theirs)
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
        current = _commit(repo, trunk)
        merged = _commit(repo, merge_commit)
        if current.id == merged.id and merged.parents:
            tree_id = _commit(repo, merged.parents[0].decode()).tree
        elif merged.parents:
            parent = _commit(repo, merged.parents[0].decode())
            merger = Merger(repo.object_store, entity_merge_attributes(), None)
            tree, conflicted = merger.merge_trees(
                _tree(repo, merged.tree), _tree(repo, current.tree), _tree(repo, parent.tree)
            )
            if conflicted:
                if fallback_tree is None:
                    raise RepoProblem(f"cannot revert {merge_commit}: it collides with trunk")
                tree_id = fallback_tree.encode()
            else:
                repo.object_store.add_object(tree)
                tree_id = tree.id
        elif fallback_tree is not None:
            tree_id = fallback_tree.encode()
        else:
            raise RepoProblem(f"cannot revert root commit {merge_commit}: no green tree known")
        commit = _write_commit(repo, tree_id, [current.id], message)
        return commit, tree_id.decode()


def restore(path: Path, trunk: str, tree: str, message: str) -> str:
    """Write a commit on top of ``trunk`` whose tree is ``tree`` (an earlier green trunk)."""
    with open_repo(path) as repo:
        return _write_commit(repo, tree.encode(), [_commit(repo, trunk).id], message)


def move(path: Path, trunk: str, old: str | None, new: str) -> bool:
    """Point ``trunk`` at ``new`` if it still points at ``old`` (``None``: does not exist)."""
    with open_repo(path) as repo:
        name = ref_name(trunk)
        note = b"loopbus merger: " + new.encode()[:12]
        if old is None:
            return bool(repo.refs.add_if_new(name, new.encode(), message=note))
        return bool(repo.refs.set_if_equals(name, old.encode(), new.encode(), message=note))


def siblings(path: Path, head: str, onto: str, unit: str | None = None) -> Siblings:
    """What trunk ``onto`` holds that ``head`` never saw: the units (other than ``unit``)
    merged, and commits pushed, since ``head`` branched, and their diff."""
    with open_repo(path) as repo:
        head_id, onto_id = _commit(repo, head).id, _commit(repo, onto).id
        bases = merge_bases(repo, onto_id, head_id)
        base = bases[0] if bases else None
        units: list[str] = []
        commits: list[str] = []
        cursor: bytes | None = onto_id
        for _ in range(SIBLING_WALK):
            if cursor is None or cursor == base:
                break
            commit = _commit(repo, cursor.decode())
            commits.append(cursor.decode())
            merged = _trailer_of(commit, "Loopbus-Unit")
            reverting = _trailer_of(commit, "Loopbus-Reverts") is not None
            if merged is not None and merged != unit and not reverting and merged not in units:
                units.append(merged)
            cursor = commit.parents[0] if commit.parents else None
        old_tree = _commit(repo, base.decode()).tree if base is not None else None
        text = tree_diff(repo, old_tree, _commit(repo, onto).tree)
    units.reverse()
    commits.reverse()
    return Siblings(
        base=base.decode() if base is not None else None,
        onto=onto,
        units=units,
        commits=commits,
        diff=text[:DIFF_CAP],
        digest=hashlib.sha256(text.encode()).hexdigest(),
        truncated=len(text) > DIFF_CAP,
    )


def merge_bases(repo: Repo, ours: bytes, theirs: bytes) -> list[bytes]:
    """Merge bases of trunk-side ``ours`` and unit-side ``theirs`` that ignore reverted merges.

    After a unit's merge is reverted, trunk's history still holds the unit's old head, so a
    plain merge base would be that head and a re-submission (which descends from it) would
    merge as if trunk already had the unit's change — when the revert took it out. The
    base of a unit whose earlier merge trunk reverted is therefore where trunk stood before
    that merge: the re-submission then brings the unit's whole change again.
    """
    bases = find_merge_base(repo, [ours, theirs])
    cursor: bytes | None = ours
    reverted: set[bytes] = set()
    for _ in range(SIBLING_WALK):
        if cursor is None:
            break
        commit = _commit(repo, cursor.decode())
        undone = _trailer_of(commit, "Loopbus-Reverts")
        if undone is not None:
            reverted.add(undone.encode())
        if cursor in reverted and len(commit.parents) == 2:
            old_head = commit.parents[1]
            if old_head == theirs or can_fast_forward(repo, old_head, theirs):
                bases = find_merge_base(repo, [commit.parents[0], theirs])
        cursor = commit.parents[0] if commit.parents else None
    return bases


def tree_diff(repo: Repo, old_tree: bytes | None, new_tree: bytes | None) -> str:
    out = io.BytesIO()
    write_tree_diff(out, repo.object_store, old_tree, new_tree)
    return out.getvalue().decode("utf-8", errors="replace")


def diff_commits(path: Path, old: str, new: str) -> str:
    """The unified diff between two commits' trees."""
    with open_repo(path) as repo:
        return tree_diff(repo, _commit(repo, old).tree, _commit(repo, new).tree)


# -- internals ---------------------------------------------------------------------------


def _commit(repo: Repo, sha: str) -> Commit:
    try:
        obj = repo.object_store[sha.encode()]
    except (KeyError, ValueError) as exc:
        raise RepoProblem(f"commit {sha} is not in the repository") from exc
    if not isinstance(obj, Commit):
        raise RepoProblem(f"{sha} is a {obj.type_name.decode()}, not a commit")
    return obj


def _tree(repo: Repo, sha: bytes) -> Tree:
    obj = repo.object_store[sha]
    assert isinstance(obj, Tree)
    return obj


def _trailer_of(commit: Commit, key: str) -> str | None:
    for line in commit.message.decode("utf-8", "replace").splitlines():
        match = _TRAILER.match(line.strip())
        if match and match.group(1) == key:
            return match.group(2).strip()
    return None


def _write_commit(repo: Repo, tree: bytes, parents: list[bytes], message: str) -> str:
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
    obj = repo.object_store[side[1]]
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
