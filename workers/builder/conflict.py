"""A conflict round: the unit's head merged with trunk, for the builder to finish.

When the merger finds that a unit's head does not merge onto trunk (a ``merge.conflicted``
fact: :class:`projections.builds.Collision`), the unit's next round starts from
the merge of trunk's head into the unit's head, made here with the merger's own driver
(:mod:`workers.entity_merge`, every path routed to it as the merger does):

* what the driver combined is in the worktree, combined;
* each file it could not combine holds conflict markers around what collided
  (``<<<<<<< ours`` is the unit, ``>>>>>>> theirs`` trunk, as ``git merge`` run on the
  unit's branch); a file the unit deleted and trunk changed holds trunk's version;
* the brief's ``conflict`` names trunk's head, the merge base and, per conflicting file,
  its three versions and the regions the driver could not combine.

When the builder answers, the adapter refuses a result that still has conflict markers
in a conflicting file (:func:`markers_left`, a problem the round is retried with), and
otherwise records a merge commit (parents: the unit's head, trunk's head) on the unit's
branch, so the next merge candidate applies; the merger's conflict finding is then
resolved (:func:`resolved`). The parents come from the log's fact and trunk's ref, never
from anything in the worktree.

Blocking (dulwich and the file system): the daemon calls these from a worker thread.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from dulwich.merge import Merger, recursive_merge
from dulwich.objects import Blob, ObjectID
from dulwich.repo import Repo

from schemas import FindingResolved
from schemas.builds import BriefConflict, BriefConflictFile, BriefConflictRegion
from workers.builder import gitdir
from workers.builder.answers import Round
from workers.entity_merge import (
    entity_merge_attributes,
    merge_file,
    register_merge_driver,
)
from workers.history import merge_bases
from workers.repository import commit_at, open_repo

MARKERS = (b"<<<<<<<", b"|||||||", b"=======", b">>>>>>>")


@dataclass(frozen=True)
class Merged:
    """The merge of ``trunk`` into the unit's ``head``, as the round starts from it."""

    head: str
    trunk: str
    merge_base: str | None
    tree: str
    finding: str
    """The merger's ``merge-conflict`` finding this round answers."""
    """The merge's tree: combined files, and conflicting ones with their markers."""
    files: tuple[BriefConflictFile, ...] = ()
    sides: dict[str, tuple[gitdir.Side, gitdir.Side, gitdir.Side]] = field(default_factory=dict)
    """Conflicting path -> its (base, unit, trunk) entries, for the index's stages."""
    extra: dict[str, bytes] = field(default_factory=dict)
    """Files the worktree holds beyond the tree: trunk's version where the unit deleted it."""

    def brief(self) -> BriefConflict:
        return BriefConflict(
            trunk=self.trunk,
            merge_base=self.merge_base,
            finding=self.finding,
            files=list(self.files),
        )


def merge(repo: Path, head: str, trunk: str, *, finding: str) -> Merged:
    """Merge ``trunk`` into ``head`` with the merger's driver (nothing but objects is
    written: no ref moves)."""
    register_merge_driver()
    with open_repo(repo) as opened:
        unit, tip = commit_at(opened, head), commit_at(opened, trunk)
        bases = merge_bases(opened, tip.id, unit.id)
        attributes = entity_merge_attributes()
        merger = Merger(opened.object_store, attributes, None)
        tree, conflicted = recursive_merge(
            opened.object_store,
            list(bases),
            unit,
            tip,
            gitattributes=attributes,
            config=None,
            merger=merger,
        )
        opened.object_store.add_object(tree)
        files: list[BriefConflictFile] = []
        sides: dict[str, tuple[gitdir.Side, gitdir.Side, gitdir.Side]] = {}
        extra: dict[str, bytes] = {}
        for raw in conflicted:
            path = raw.decode("utf-8", "surrogateescape")
            info = merger.conflict_info.get(raw)
            found = tuple(_side(s) for s in (info.ancestor, info.ours, info.theirs)) if info else ()
            if len(found) != 3:
                files.append(BriefConflictFile(path=path, regions=[_whole(path, "unknown")]))
                continue
            sides[path] = (found[0], found[1], found[2])
            data = [_blob(opened, side) for side in found]
            files.append(_file(path, data[0], data[1], data[2]))
            if data[1] is None and data[2] is not None and found[1] is None:
                extra[path] = data[2]  # as git leaves it: trunk's change, to keep or delete
        return Merged(
            head=unit.id.decode(),
            trunk=tip.id.decode(),
            merge_base=bases[0].decode() if bases else None,
            tree=tree.id.decode(),
            finding=finding,
            files=tuple(files),
            sides=sides,
            extra=extra,
        )


def prepare(repo: Path, merged: Merged, dest: Path, *, branch: str) -> None:
    """The round's worktree: the merge's files in a small checkout of ``branch`` whose
    ``MERGE_HEAD`` is trunk and whose index has the conflicting files unmerged."""
    gitdir.make(
        repo,
        dest,
        branch=branch,
        head=merged.head,
        tree=merged.tree,
        merge_head=merged.trunk,
        conflicts=merged.sides,
    )
    for path, data in merged.extra.items():
        _write_inside(dest, path, data)


def markers_left(worktree: Path, merged: Merged) -> str | None:
    """One line naming each conflicting file that still has conflict markers (lines the
    merge wrote that neither side's version has), or ``None`` when none is left."""
    left: list[str] = []
    for conflict in merged.files:
        data = _regular_file(worktree, conflict.path)
        if data is None:
            continue  # deleted (a resolution), or not a plain file the adapter reads
        known = {
            line.rstrip(b"\r")
            for text in (conflict.unit, conflict.trunk)
            if text is not None
            for line in text.encode().split(b"\n")
        }
        numbers = [
            n
            for n, line in enumerate(data.split(b"\n"), start=1)
            if _marker(line.rstrip(b"\r")) and line.rstrip(b"\r") not in known
        ]
        if numbers:
            shown = ", ".join(str(n) for n in numbers[:6]) + (" …" if len(numbers) > 6 else "")
            left.append(f"{conflict.path} (line {shown})")
    if not left:
        return None
    return (
        f"conflict markers are left in {', '.join(left)}: edit each conflict into its "
        "resolution and remove every <<<<<<<, ======= and >>>>>>> line before answering "
        "completed (nothing was committed)"
    )


def resolved(round_: Round, merged: Merged, sha: str) -> FindingResolved:
    """The merger's conflict finding, closed by the merge commit the adapter recorded."""
    return FindingResolved(
        id=round_.id("conflict-resolved"),
        project=round_.project,
        actor=round_.system,
        finding=merged.finding,
        why=(
            f"the builder adapter recorded the merge of trunk {merged.trunk[:12]} into "
            f"{round_.unit} as {sha[:12]}, with no conflict markers left"
        ),
        unit=round_.unit,
    )


# -- internals ---------------------------------------------------------------------------


def _side(side: tuple[int | None, bytes | None]) -> gitdir.Side:
    mode, sha = side
    return None if mode is None or sha is None else (mode, sha.decode())


def _blob(repo: Repo, side: gitdir.Side) -> bytes | None:
    if side is None or not stat.S_ISREG(side[0]):
        return None
    obj = repo.object_store[ObjectID(side[1].encode())]
    return obj.data if isinstance(obj, Blob) else None


def _text(data: bytes | None) -> str | None:
    if data is None or b"\0" in data[:8000]:
        return None
    return data.decode("utf-8", "replace")


def _whole(
    path: str, reason: str, texts: tuple[str | None, ...] = (None, None, None)
) -> BriefConflictRegion:
    base, unit, trunk = texts
    return BriefConflictRegion(
        kind="file", name=path, reason=reason, base=base or "", unit=unit or "", trunk=trunk or ""
    )


def _file(
    path: str, base: bytes | None, unit: bytes | None, trunk: bytes | None
) -> BriefConflictFile:
    texts = (_text(base), _text(unit), _text(trunk))
    regions: list[BriefConflictRegion] = []
    if unit is not None and trunk is not None:
        result = merge_file(base or b"", unit, trunk, path)
        regions = [
            BriefConflictRegion(
                kind=c.kind, name=c.name, reason=c.reason, base=h.base, unit=h.ours, trunk=h.theirs
            )
            for c in result.conflicts
            for h in (c.hunks or (None,))
            if h is not None
        ] or [_whole(path, result.conflicts[0].reason if result.conflicts else "mode", texts)]
    elif unit is None and trunk is None:
        regions = [_whole(path, "type", texts)]
    else:
        regions = [_whole(path, "modify-delete" if trunk is None else "delete-modify", texts)]
    return BriefConflictFile(
        path=path, base=texts[0], trunk=texts[2], unit=texts[1], regions=regions
    )


def _marker(line: bytes) -> bool:
    for marker in MARKERS:
        if line == marker or (marker != b"=======" and line.startswith(marker + b" ")):
            return True
    return False


def _write_inside(root: Path, path: str, data: bytes) -> None:
    """Write ``root/path`` (a path from a tree) through plain folders only: a part that is
    not a plain name, or a link on the way, and nothing is written."""
    parts = path.split("/")
    if any(part in ("", ".", "..") or part.lower() == ".git" for part in parts):
        return
    here = root
    for part in parts[:-1]:
        here = here / part
        if not here.exists() and not here.is_symlink():
            here.mkdir()
        if here.is_symlink() or not here.is_dir():
            return
    fd = os.open(here / parts[-1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _regular_file(root: Path, path: str) -> bytes | None:
    """The bytes of ``root/path`` if every step to it is a plain folder and it is a plain
    file: the agent may have left a link (to a secret, or a fifo that blocks a read)."""
    here = str(root)
    parts = path.split("/")
    for part in parts[:-1]:
        here = os.path.join(here, part)
        try:
            if not stat.S_ISDIR(os.lstat(here).st_mode):
                return None
        except OSError:
            return None
    target = os.path.join(here, parts[-1])
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read()
