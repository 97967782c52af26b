"""Lending a worktree to a run's uid, and taking it back.

For the run, every entry of the tree is given to the agent's uid. Taking it back happens
after every process of that uid is gone (nothing races the walk), and gives back only
what the agent's uid owns: never following a link (an agent can leave one pointing at
``creds/system.json``), never descending into a linked folder, leaving alone a hard link
to a file of someone else's, and clearing set-user-ID and set-group-ID bits (a file the
agent marked set-uid must not become a set-uid program of the daemon's user).

Blocking (file system): callers run these in a worker thread.
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
    yield str(root)
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            yield os.path.join(folder, name)


def hand_tree(root: Path, to: Owner) -> None:
    """Give every entry under ``root`` (links themselves, never their targets) to ``to``."""
    for entry in _entries(root):
        with contextlib.suppress(FileNotFoundError):
            os.chown(entry, to.uid, to.gid, follow_symlinks=False)


def take_back(root: Path, owner: Owner) -> None:
    """Give ``root`` and every entry under it the agent's uid owns back to ``owner``."""
    borrower = os.lstat(root).st_uid
    for entry in _entries(root):
        with contextlib.suppress(FileNotFoundError):
            info = os.lstat(entry)
            if info.st_uid != borrower:
                continue  # not the agent's: a hard link to another's file stays as it is
            os.chown(entry, owner.uid, owner.gid, follow_symlinks=False)
            if not stat.S_ISLNK(info.st_mode) and info.st_mode & (stat.S_ISUID | stat.S_ISGID):
                os.chmod(entry, stat.S_IMODE(info.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
