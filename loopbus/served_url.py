"""The address of the server a running ``loopbus up`` started, kept in its data directory.

``up`` serves on port 4222 unless that port is taken, and then on a free one. Commands run
beside it find its credentials in the data directory (``loopbus.settings``); they find its
address there too, so a taken port does not send them to whatever else listens on 4222
(with this project's credentials).

The file is believed only while an ``up`` holds the data directory's lock (``up.lock``,
taken for as long as it runs), and only for the loopback address the embedded server
listens on. The data directory is found by walking up from the current directory, so a
``.loopbus`` folder that came from somewhere else — committed to a repository and checked
out, or left behind by an ``up`` that crashed — must not be able to send commands to a
server of its choosing: a file holds no lock, and a stale or planted address is ignored.
"""

from __future__ import annotations

import fcntl
import os
import re
from pathlib import Path

URL_FILE = "nats-url"
"""In the data directory: the URL ``up`` serves, on one line."""
LOCK_FILE = "up.lock"
"""In the data directory: the file ``up`` holds an exclusive ``flock`` on while it runs."""

_LOOPBACK = re.compile(r"nats://127\.0\.0\.1:[1-9][0-9]{0,4}")
"""What an embedded server's URL looks like (``bus.embedded``): loopback, a port."""


def write(data_dir: Path, url: str) -> None:
    """Record that this process serves ``url`` for ``data_dir`` (the directory is private)."""
    path = data_dir / URL_FILE
    partial = path.with_name(f".{URL_FILE}.{os.getpid()}")
    partial.write_text(f"{url}\n")
    partial.replace(path)  # a command never reads half a file


def remove(data_dir: Path) -> None:
    """Forget the address when ``up`` stops (a later ``up`` may serve elsewhere)."""
    (data_dir / URL_FILE).unlink(missing_ok=True)


def read(data_dir: Path) -> str | None:
    """The URL the running ``up`` of ``data_dir`` serves, or ``None`` when none is recorded,
    it is not a loopback address, or no ``up`` holds that directory now."""
    try:
        url = (data_dir / URL_FILE).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if _LOOPBACK.fullmatch(url) is None or int(url.rpartition(":")[2]) > 65535:
        return None
    return url if held(data_dir) else None


def held(data_dir: Path) -> bool:
    """Whether a running ``up`` holds ``data_dir``'s lock right now.

    Probed with a shared lock that is let go at once; ``up`` retries its own for a moment
    (``loopbus.commands.up.hold_data_dir``), so a probe never makes it refuse to start.
    """
    try:
        descriptor = os.open(data_dir / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True  # an up holds it exclusively
    except OSError:
        return False
    else:
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        return False
    finally:
        os.close(descriptor)
