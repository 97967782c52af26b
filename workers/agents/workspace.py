"""Where an agent's command runs: a private temporary folder, and a read-only copy of a
commit that an agent stripped of its privileges can read but not change.

Blocking (dulwich and the file system): the daemons call these from a worker thread.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from workers.remote import fetch_missing
from workers.repository import checkout, tree_of

NOBODY = 65534
"""Owner of the copy when the daemon is root: an agent (an unprivileged uid of its own,
:mod:`.local`) then owns nothing in it, so it can neither write nor chmod."""


def workdir(prefix: str, *, mode: int = 0o700) -> Path:
    """A fresh temporary folder (``mode`` 0o755 or 0o711 lets an agent's uid reach a copy
    or a worktree inside it)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(mode)
    return path


def remove(path: Path) -> None:
    """Remove a folder made by :func:`workdir`, read-only copies inside it included."""
    for copy in path.iterdir() if path.exists() else ():
        if copy.is_dir() and not copy.is_symlink():
            make_writable(copy)
    shutil.rmtree(path, ignore_errors=True)


def read_only_copy(repo: str | Path, head: str, dest: Path) -> int:
    """Check ``head`` out under ``dest`` and make every file and folder read-only."""
    fetch_missing(repo, head)  # a head pushed since this mirror's last fetch
    written = checkout(Path(repo), tree_of(Path(repo), head), dest)
    as_root = os.geteuid() == 0
    for root, dirs, files in os.walk(dest, topdown=False):
        for name in files:
            target = Path(root, name)
            if not target.is_symlink():
                # Readable by everyone, whatever the checkout's umask made it (loopbus up runs
                # with 077): the agent's uid owns nothing here and must still read it.
                executable = target.stat().st_mode & 0o111
                target.chmod(0o555 if executable else 0o444)
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
