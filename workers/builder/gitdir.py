"""The round's worktree as a small git checkout of the unit's branch.

An ordinary coding agent runs ``git status``, ``git diff`` and ``git log`` to see where it
is, so the worktree is a real repository: ``.git`` holds the round's start commit (and,
in a conflict round, trunk's head as ``MERGE_HEAD``) as a *shallow* history of one commit
each, the branch ``loopbus/<project>/<unit>`` checked out at the start commit, and an
index that matches the files (in a conflict round: the merge's, with each conflicting
file in stages 1-3, as ``git merge`` leaves it).

It is the agent's copy and nothing else. The daemon writes it before the run and never
reads it afterwards: the adapter commits the worktree's files, skipping every ``.git``
(:data:`.worktree.ALWAYS_IGNORED`), and takes the commit's parents from the log's facts,
not from ``HEAD`` or ``MERGE_HEAD``; the project's repository is not reachable from it
(no alternates, no remote), so what an agent writes there reaches no commit, ref or
daemon.

Blocking (dulwich and the file system): the daemon calls this from a worker thread.
"""

from __future__ import annotations

import stat
from collections.abc import Mapping
from pathlib import Path

from dulwich.index import ConflictedIndexEntry, IndexEntry, build_index_from_tree
from dulwich.object_store import MemoryObjectStore
from dulwich.objects import Commit, ObjectID, ShaFile, Tree
from dulwich.refs import Ref
from dulwich.repo import Repo

from workers.repository import commit_at, open_repo

Side = tuple[int, str] | None
"""A path's (mode, blob id) on one side of a merge; ``None``: absent there."""


def make(
    repo: Path,
    dest: Path,
    *,
    branch: str,
    head: str,
    tree: str | None = None,
    merge_head: str | None = None,
    conflicts: Mapping[str, tuple[Side, Side, Side]] | None = None,
) -> None:
    """Check ``tree`` (default: ``head``'s) out into the empty folder ``dest`` with a
    ``.git`` holding ``head`` (and ``merge_head``) shallow, on ``branch``; ``conflicts``
    (path -> base, unit, trunk sides) become unmerged index entries."""
    with open_repo(repo) as source:
        tips = [commit_at(source, head)]
        if merge_head is not None:
            tips.append(commit_at(source, merge_head))
        root = ObjectID((tree or tips[0].tree.decode()).encode())
        with Repo.init(str(dest)) as target:
            copied = _copy(source, target, [c.id for c in tips], root)
            target.update_shallow({c.id for c in tips}, None)
            ref = Ref(f"refs/heads/{branch}".encode())
            target.refs[ref] = tips[0].id
            target.refs.set_symbolic_ref(Ref(b"HEAD"), ref)
            build_index_from_tree(str(dest), target.index_path(), copied, root)
            if merge_head is not None:
                git = Path(target.controldir())
                (git / "MERGE_HEAD").write_text(merge_head + "\n")
                (git / "MERGE_MSG").write_text(f"Merge trunk {merge_head[:12]} into {branch}\n")
                (git / "MERGE_MODE").write_text("")
            if conflicts:
                _unmerged(target, conflicts)


def _copy(source: Repo, target: Repo, tips: list[ObjectID], root: ObjectID) -> MemoryObjectStore:
    """The tips' commits and every tree and blob of them and of ``root`` (the round's
    tree, a merge written for it in a conflict round) into ``target``, as one pack.

    Whole objects, stored without compression: reusing the source's deltas means resolving
    their bases (seconds on a mid-size repository), compressing again costs a second more,
    and the folder lives for one round."""
    store = source.object_store
    objects: dict[ObjectID, ShaFile] = {tip: store[tip] for tip in tips}
    pending = [commit.tree for commit in objects.values() if isinstance(commit, Commit)]
    pending.append(root)
    while pending:
        sha = pending.pop()
        if sha in objects:
            continue
        obj = objects[sha] = store[sha]
        if isinstance(obj, Tree):
            pending.extend(
                entry.sha
                for entry in obj.iteritems()
                if entry.sha is not None and entry.mode != 0o160000  # a submodule: not ours
            )
    target.object_store.pack_compression_level = 0
    target.object_store.add_objects([(obj, None) for obj in objects.values()])
    return _Read(objects)


class _Read(MemoryObjectStore):
    """The objects just read, for the checkout to take them from without a second lookup in
    the source's packs (``add_object`` would copy each; these are only read)."""

    def __init__(self, objects: dict[ObjectID, ShaFile]) -> None:
        super().__init__()
        self._data = objects


def _unmerged(target: Repo, conflicts: Mapping[str, tuple[Side, Side, Side]]) -> None:
    index = target.open_index()
    for path, sides in conflicts.items():
        name = path.encode()
        entries = [_entry(side) for side in sides]
        if name in index and isinstance(index[name], IndexEntry):
            del index[name]
        index[name] = ConflictedIndexEntry(ancestor=entries[0], this=entries[1], other=entries[2])
    index.write()


def _entry(side: Side) -> IndexEntry | None:
    if side is None or stat.S_ISDIR(side[0]):
        return None
    return IndexEntry(
        ctime=(0, 0),
        mtime=(0, 0),
        dev=0,
        ino=0,
        mode=side[0],
        uid=0,
        gid=0,
        size=0,
        sha=ObjectID(side[1].encode()),
    )


__all__ = ["Side", "make"]
