"""The per-uid lookup the local executor makes for every run (:func:`uids.uid_alive`):
a live process of the uid is seen, another uid's is not, and a zombie is not alive."""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import pytest

from workers.agents import uids

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="running a process as a uid needs root")


def _free_uid() -> int:
    """A uid in the executor's range that no user has and no process runs as."""
    for uid in range(uids.DEFAULT_UIDS[0] + 900, uids.DEFAULT_UIDS[1]):
        try:
            pwd.getpwuid(uid)
        except KeyError:
            if not uids.uid_alive(uid):
                return uid
    raise AssertionError("no free uid in the range")


def test_a_live_process_of_the_uid_is_seen_and_its_zombie_is_not() -> None:
    uid = _free_uid()
    assert not uids.uid_alive(uid)
    # cat waits on its stdin: alive until we close it.
    child = subprocess.Popen(["cat"], user=uid, group=uid, stdin=subprocess.PIPE, cwd="/")
    try:
        assert uids.uid_alive(uid)
        assert not uids.uid_alive(uid + 1)  # only that uid's processes count
        assert child.stdin is not None
        child.stdin.close()
        # Ended but not reaped: a zombie, as a killed run's processes stay in a container
        # whose init reaps nothing. The uid is free again.
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        assert Path(f"/proc/{child.pid}").exists()
        assert not uids.uid_alive(uid)
    finally:
        child.kill()
        child.wait()


def test_a_lease_skips_a_uid_a_process_runs_as(tmp_path: Path) -> None:
    uid = _free_uid()
    child = subprocess.Popen(["cat"], user=uid, group=uid, stdin=subprocess.PIPE, cwd="/")
    taken = None
    try:
        taken = uids.lease((uid, uid + 1), tmp_path)
        assert taken.uid == uid + 1
        with pytest.raises(uids.NoFreeUid):
            uids.lease((uid, uid + 1), tmp_path)  # one busy, one held
    finally:
        child.kill()
        child.wait()
        if taken is not None:
            uids.release(taken)


SYSTEM_PYTHON = "/usr/bin/python3"
"""An interpreter any uid may run (this one may live under /root, which another uid cannot
enter)."""


def test_a_process_that_hides_its_proc_files_is_still_seen() -> None:
    """An agent's process can make itself non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``): the
    files under its /proc folder then belong to root. The lookup judges the folder's own
    owner, which stays the process's uid, so such a process still holds its uid (it is not
    leased again, and the sweep does not stop early)."""
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"{SYSTEM_PYTHON} is missing: a python another uid may run is needed")
    uid = _free_uid()
    hide = (  # PR_SET_DUMPABLE is 4
        "import ctypes, sys; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); "
        "print(1, flush=True); sys.stdin.read()"
    )
    child = subprocess.Popen(
        [SYSTEM_PYTHON, "-I", "-c", hide],
        user=uid,
        group=uid,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd="/",
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b"1\n"
        assert os.stat(f"/proc/{child.pid}/stat").st_uid == 0  # it did hide its files
        assert uids.uid_alive(uid)
    finally:
        child.kill()
        child.wait()
