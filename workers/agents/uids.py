"""The per-run uids of the local executor under a root daemon: leasing one, and ending
every process of it.

A run's uid comes from ``[agents] uids``: one no other live run holds (a lock file per
uid in a root-only folder), no process runs as, and no user of this host has. After the
run every process of that uid is killed (:func:`sweep`) before the uid is released, so
the next run that takes it starts alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

DEFAULT_UIDS = (60000, 60999)
LOCK_DIR = Path("/run/loopbus-agents")
"""Where a root daemon keeps one lock file per uid in use (0700, root's)."""
SWEEPS = 5  # kill(-1) passes over a run's uid; a fork racing one pass is caught by the next

LAUNCHER = Path(sys.executable).resolve()
"""loopbus's own interpreter, by its real path: it runs the launcher and :data:`KILL_ALL`."""

KILL_ALL = """\
import os, sys
uid = int(sys.argv[1])
os.setgroups([])
os.setresgid(uid, uid, uid)
os.setresuid(uid, uid, uid)
try:
    os.kill(-1, 9)  # every process of uid, in any session or pid namespace, but this one
except OSError:
    pass
"""


class NoFreeUid(Exception):
    """Raised when every uid of ``[agents] uids`` is held by a live run."""


@dataclass
class Lease:
    """A uid held for one run, and the lock file descriptor that holds it."""

    uid: int
    fd: int


def check_lock_dir(folder: Path) -> str | None:
    """``None`` when ``folder`` is ours alone (made 0700 if missing); else why not. Another
    user able to write there could hold every uid, or swap a lock for a link."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(folder)
    except OSError as exc:
        return f"cannot use {folder} for the agents' uid locks ({exc.strerror})"
    if not os.path.isdir(folder) or os.path.islink(folder) or info.st_uid != os.geteuid():
        return f"{folder} is not a folder of this user's: remove it (it holds agent uid locks)"
    if info.st_mode & 0o077:
        return f"{folder} is open to other users ({oct(info.st_mode & 0o777)}): chmod 700 it"
    return None


def lease(uids: tuple[int, int], lock_dir: Path) -> Lease:
    """A uid of the range that no other live run holds, no process runs as, and no user
    of this host has."""
    low, high = uids
    start = random.randint(low, high)  # spread: a uid just freed is not the next one taken
    for offset in range(high - low + 1):
        uid = low + (start - low + offset) % (high - low + 1)
        if _has_account(uid) or uid_alive(uid):
            continue
        fd = os.open(lock_dir / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if uid_alive(uid):  # a run that just ended may still be sweeping it
            release(Lease(uid, fd))
            continue
        return Lease(uid, fd)
    raise NoFreeUid(f"every uid of [agents] uids = {low}-{high} is in use: widen the range")


def _has_account(uid: int) -> bool:
    """A uid a user of this host has: its files would be the run's, and its processes
    killed with the run's."""
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def release(held: Lease) -> None:
    with contextlib.suppress(OSError):
        fcntl.flock(held.fd, fcntl.LOCK_UN)
    with contextlib.suppress(OSError):
        os.close(held.fd)


def uid_alive(uid: int) -> bool:
    """Whether a live process runs as ``uid`` right now (from /proc; a zombie is not alive:
    in a container whose init reaps nothing, a killed run's processes stay zombies).

    Every check leases a uid and sweeps it (three of these at least), on a host running
    hundreds of processes: so a process is judged by its /proc folder's owner (one stat),
    only ``uid``'s own have their state read, and the first live one ends the scan. Reading
    every process's state to collect every uid cost several times more for one answer."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            with open(os.path.join(entry.path, "stat"), "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # the process ended while we looked
        if state not in (b"Z", b"X"):
            return True
    return False


def sweep(uid: int) -> None:
    """Kill every process of ``uid``: ``kill(-1, SIGKILL)`` sent as that uid reaches
    exactly its processes (in any session or pid namespace), never another user's."""
    for _ in range(SWEEPS):
        if not uid_alive(uid):
            return
        # Started as root, it becomes ``uid`` only to kill: nothing needs to be executable
        # by ``uid`` (an interpreter under /root is not).
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                [str(LAUNCHER), "-I", "-S", "-c", KILL_ALL, str(uid)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=30,
                check=False,
            )
