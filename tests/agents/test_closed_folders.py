"""Folders closed to other users, as a run's uid meets them."""

from __future__ import annotations

from workers.agents.environment import closed_to_others
from workers.agents.workspace import remove, workdir

PYTHON = "/usr/bin/python3"  # outside any 0700 home: reachable by a run's uid on both paths


def test_closed_to_others_finds_the_folder_a_run_s_uid_cannot_enter() -> None:
    """A 0700 folder on the way is found: as named, behind the last name's link, and
    behind a link in the middle of the path; an open path gives none."""
    closed = workdir("loopbus-closed-", mode=0o700)
    opened = workdir("loopbus-open-", mode=0o755)
    try:
        (closed / "bin").mkdir(mode=0o755)
        (closed / "bin" / "python").symlink_to(PYTHON)
        (opened / "python").symlink_to(closed / "bin" / "python")
        (opened / "bin").symlink_to(closed / "bin")
        assert closed_to_others(closed / "bin" / "python") == closed
        assert closed_to_others(opened / "python") == closed  # the last name's link
        assert closed_to_others(opened / "bin" / "python") == closed  # a folder's link
        assert closed_to_others(opened / "bin" / ".." / "x") == closed  # ".." of its target
        assert closed_to_others(opened) is None
        assert closed_to_others(opened / "absent" / "python") is None
    finally:
        remove(closed)
        remove(opened)
