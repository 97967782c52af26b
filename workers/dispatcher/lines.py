"""How many lines a unit's change touched: the size SHIP bounds (``[ship] max_unit_lines``).

Counted as a unified diff counts them: each added and each removed line, file by file
between two commits' trees. A file that is not UTF-8 text counts as one line per side that
has it (a binary change is a change, but its bytes are not lines).
"""

from __future__ import annotations

import difflib
from pathlib import Path

from dulwich.diff_tree import tree_changes
from dulwich.objects import Blob, Commit

from workers.errors import RepoError
from workers.repository import open_repo


def lines_changed(path: Path, base: str, head: str) -> int:
    """Added plus removed lines from ``base`` to ``head``; :class:`RepoError` when either
    commit cannot be read."""
    with open_repo(path) as repo:
        try:
            old, new = repo[base.encode()], repo[head.encode()]
        except (KeyError, ValueError) as exc:
            raise RepoError(f"cannot count {base[:12]}..{head[:12]}: no such commit") from exc
        if not isinstance(old, Commit) or not isinstance(new, Commit):
            raise RepoError(f"cannot count {base[:12]}..{head[:12]}: not both commits")
        total = 0
        for change in tree_changes(repo.object_store, old.tree, new.tree):
            sides = []
            for entry in (change.old, change.new):
                blob = repo[entry.sha] if entry is not None and entry.sha is not None else None
                sides.append(blob.data if isinstance(blob, Blob) else None)
            total += _count(sides[0], sides[1])
        return total


def _count(before: bytes | None, after: bytes | None) -> int:
    try:
        old = before.decode("utf-8").splitlines() if before is not None else []
        new = after.decode("utf-8").splitlines() if after is not None else []
    except UnicodeDecodeError:
        return (before is not None) + (after is not None)
    return sum(
        1
        for line in difflib.unified_diff(old, new, lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )
