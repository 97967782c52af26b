"""Lending a worktree to an agent's uid for one run, and taking it back.

An agent runs as an unprivileged uid that must be able to write its worktree, while the
daemon that made the worktree usually runs as root. For the run, every entry of the tree
is handed to the agent's uid; afterwards every entry (including what the agent created)
goes back to the owner the worktree's root had before.

Taking it back runs after the agent's processes are all gone, so nothing races the walk;
it still never follows a symbolic link (an agent can leave one pointing at
``creds/system.json``, and a following chown would hand that file to the daemon's owner
of choice), never descends into a linked folder, and clears set-user-ID and set-group-ID
bits on everything it returns: a file the agent marked set-uid must not become a
set-uid program of the daemon's user.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Owner:
    uid: int
    gid: int


def owner_of(path: Path) -> Owner:
    info = os.lstat(path)
    return Owner(info.st_uid, info.st_gid)


def _entries(root: Path) -> Iterator[str]:
    """Every path in the tree, the root first; links are yielded but never followed."""
    yield str(root)
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            yield os.path.join(folder, name)


def hand_tree(root: Path, to: Owner, *, clear_setid: bool = False) -> None:
    """Give every entry under ``root`` (links themselves, never their targets) to ``to``."""
    for entry in _entries(root):
        # An entry can vanish between the listing and the chown only if something else
        # writes the tree; skip it rather than leave the rest of the tree unreturned.
        with contextlib.suppress(FileNotFoundError):
            os.lchown(entry, to.uid, to.gid)
            if clear_setid:
                info = os.lstat(entry)
                if not stat.S_ISLNK(info.st_mode) and info.st_mode & (stat.S_ISUID | stat.S_ISGID):
                    os.chmod(entry, stat.S_IMODE(info.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
