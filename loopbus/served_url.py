"""The address of the server a running ``loopbus up`` started, kept in its data directory.

``up`` serves on port 4222 unless that port is taken, and then on a free one. Commands run
beside it find its credentials in the data directory (``loopbus.settings``); they find its
address there too, so a taken port does not send them to whatever else listens on 4222
(with this project's credentials). The file is trusted only while the ``up`` that wrote it
still runs: a crashed ``up`` leaves it behind, and a stale port must not be dialled.
"""

from __future__ import annotations

import os
from pathlib import Path

URL_FILE = "nats-url"
"""In the data directory: the URL on one line, then the pid of the ``up`` serving it."""


def write(data_dir: Path, url: str) -> None:
    """Record that this process serves ``url`` for ``data_dir`` (the directory is private)."""
    path = data_dir / URL_FILE
    partial = path.with_name(f".{URL_FILE}.{os.getpid()}")
    partial.write_text(f"{url}\n{os.getpid()}\n")
    partial.replace(path)  # a command never reads half a file


def remove(data_dir: Path) -> None:
    """Forget the address when ``up`` stops (a later ``up`` may serve elsewhere)."""
    (data_dir / URL_FILE).unlink(missing_ok=True)


def read(data_dir: Path) -> str | None:
    """The URL the ``up`` of ``data_dir`` serves, or ``None`` when none is recorded or the
    process that recorded it is gone."""
    try:
        url, pid = (data_dir / URL_FILE).read_text().split()
        alive = _running(int(pid))
    except (OSError, ValueError):
        return None
    return url if alive else None


def _running(pid: int) -> bool:
    if pid <= 0:
        return False  # 0 and -1 would signal a whole group, not one process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive, though not ours to signal
    return True
