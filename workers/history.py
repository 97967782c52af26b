"""Reading trunk's history back with dulwich: branches, commit trailers, diffs, and where a
unit's siblings branched (what the merger reads about trunk after the fact).

Split from :mod:`workers.repository` (commits, trees, checkouts, a unit's change),
with the same rule: every helper opens its own ``Repo``; async callers use a thread.
"""

from __future__ import annotations

import hashlib
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dulwich.graph import can_fast_forward, find_merge_base
from dulwich.objects import Commit, ObjectID
from dulwich.patch import write_tree_diff
from dulwich.refs import Ref
from dulwich.repo import Repo

from workers.repository import SIBLING_WALK, commit_of, open_repo

DIFF_CAP = 20000
"""Characters of a sibling diff carried in a finding (its digest covers all of it)."""

_TRAILER = re.compile(r"^(Loopbus-[A-Za-z-]+):\s*(\S.*)$")


def ref_name(branch: str) -> Ref:
    """``main`` -> ``refs/heads/main``; a full ``refs/...`` name is kept."""
    return Ref(branch.encode() if branch.startswith("refs/") else b"refs/heads/" + branch.encode())


def read_ref(path: Path, branch: str) -> str | None:
    """The commit ``branch`` points at, or ``None`` when the branch does not exist."""
    with open_repo(path) as repo:
        try:
            return repo.refs[ref_name(branch)].decode()
        except KeyError:
            return None


def has_commit(path: Path, sha: str) -> bool:
    with open_repo(path) as repo:
        try:
            return isinstance(repo.object_store[ObjectID(sha.encode())], Commit)
        except (KeyError, ValueError):
            return False


def trailers_of(commit: Commit) -> dict[str, str]:
    """The ``Loopbus-*`` trailers of a commit's message (what the merger wrote there)."""
    found: dict[str, str] = {}
    for line in commit.message.decode("utf-8", errors="replace").splitlines():
        match = _TRAILER.match(line.strip())
        if match:
            found[match.group(1)] = match.group(2).strip()
    return found


def trailers(path: Path, sha: str) -> dict[str, str]:
    with open_repo(path) as repo:
        return trailers_of(commit_of(repo, sha))


def tree_diff(repo: Repo, old_tree: ObjectID | None, new_tree: ObjectID | None) -> str:
    out = io.BytesIO()
    write_tree_diff(out, repo.object_store, old_tree, new_tree)
    return out.getvalue().decode("utf-8", errors="replace")


def diff_commits(path: Path, old: str, new: str) -> str:
    """The unified diff between two commits' trees."""
    with open_repo(path) as repo:
        return tree_diff(repo, commit_of(repo, old).tree, commit_of(repo, new).tree)


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


def siblings(path: Path, head: str, onto: str, unit: str | None = None) -> Siblings:
    """What trunk ``onto`` holds that ``head`` never saw: the units (other than ``unit``)
    merged, and commits pushed, since ``head`` branched, and their diff."""
    with open_repo(path) as repo:
        head_id, onto_id = commit_of(repo, head).id, commit_of(repo, onto).id
        bases = merge_bases(repo, onto_id, head_id)
        base = bases[0] if bases else None
        units: list[str] = []
        commits: list[str] = []
        cursor: bytes | None = onto_id
        for _ in range(SIBLING_WALK):
            if cursor is None or cursor == base:
                break
            commit = commit_of(repo, cursor.decode())
            commits.append(cursor.decode())
            marks = trailers_of(commit)
            merged = marks.get("Loopbus-Unit")
            reverting = "Loopbus-Reverts" in marks
            if merged is not None and merged != unit and not reverting and merged not in units:
                units.append(merged)
            cursor = commit.parents[0] if commit.parents else None
        old_tree = commit_of(repo, base.decode()).tree if base is not None else None
        text = tree_diff(repo, old_tree, commit_of(repo, onto).tree)
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


def merge_bases(repo: Repo, ours: ObjectID, theirs: ObjectID) -> list[ObjectID]:
    """Merge bases of trunk-side ``ours`` and unit-side ``theirs`` that ignore reverted merges.

    After a unit's merge is reverted, trunk's history still holds the unit's old head, so a
    plain merge base would be that head and a re-submission (which descends from it) would
    merge as if trunk already had the unit's change — when the revert took it out. The
    base of a unit whose earlier merge trunk reverted is therefore where trunk stood before
    that merge: the re-submission then brings the unit's whole change again.
    """
    bases = find_merge_base(repo, [ours, theirs])
    cursor: ObjectID | None = ours
    reverted: set[bytes] = set()
    for _ in range(SIBLING_WALK):
        if cursor is None:
            break
        commit = commit_of(repo, cursor.decode())
        undone = trailers_of(commit).get("Loopbus-Reverts")
        if undone is not None:
            reverted.add(undone.encode())
        if cursor in reverted and len(commit.parents) == 2:
            old_head = commit.parents[1]
            if old_head == theirs or can_fast_forward(repo, old_head, theirs):
                bases = find_merge_base(repo, [commit.parents[0], theirs])
        cursor = commit.parents[0] if commit.parents else None
    return bases
