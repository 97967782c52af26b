"""The data directory is its owner's alone: folders 0700, files 0600 (docs/security.md).

Everything ``loopbus up`` keeps there — credentials, signing keys, the log's store, daemon
logs, the server's configuration — is either a secret or tells a reader what the system
does; no other account on the host has a reason to read it. Two layers keep it private:
:data:`UMASK` is set for ``up``, ``demo`` and every child they start (so files made by
nats-server and the daemons are born private), and the files loopbus makes itself are
created with their mode, not left to whatever umask the caller had.
"""

from __future__ import annotations

import os
from pathlib import Path

UMASK = 0o077
DIR_MODE = 0o700
FILE_MODE = 0o600


def private_umask() -> int:
    """Set :data:`UMASK` for this process (and so its children); returns the one before."""
    return os.umask(UMASK)


def private_dir(path: Path) -> Path:
    """Make ``path`` (and missing parents) and leave it 0700, tightening one that exists.

    Only ``path`` itself is tightened: parents made here are 0700 too, parents that were
    there are someone else's to decide.
    """
    old = os.umask(UMASK)
    try:
        path.mkdir(parents=True, exist_ok=True)
    finally:
        os.umask(old)
    path.chmod(DIR_MODE)
    return path


def write_private(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` readable by its owner only, from the first byte on (an
    existing file is tightened before it is rewritten)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "wb") as out:
        os.fchmod(fd, FILE_MODE)
        out.write(data.encode() if isinstance(data, str) else data)


def tighten(fd: int) -> None:
    """Leave the open file ``fd`` readable by its owner only (for files opened to append,
    which may predate the data directory's rules)."""
    os.fchmod(fd, FILE_MODE)
