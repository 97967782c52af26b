"""CPU-bound processes beside a benchmark (``--hog N``): the loop is never alone on a
developer's laptop or a CI runner, so its figures are measured with other work running too.

Where a hog runs matters as much as that it runs: with the kernel's autogroup scheduling
(``/proc/sys/kernel/sched_autogroup_enabled``, on in most distributions and on the
benchmark machine), the CPU is shared out between sessions first and between the
processes of a session second. A hog in the benchmark's own session takes its share from
the benchmark's processes only; a hog in a session of its own (``apart``) competes with
every session, as other work (another terminal's build, another CI job) does.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def busy_loops(count: int, *, apart: bool = False) -> Iterator[list[int]]:
    """Run ``count`` busy-loop processes for the body's duration, killed when it ends;
    ``apart``: each in a session of its own (see the module docstring). Yields their pids."""
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=apart)
        for _ in range(count)
    ]
    try:
        yield [hog.pid for hog in hogs]
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def scheduling_group(pid: int) -> str:
    """The autogroup ``pid`` is scheduled in (``/autogroup-N``), or ``?`` where the kernel
    does not say."""
    try:
        return Path(f"/proc/{pid}/autogroup").read_text().split()[0]
    except (OSError, IndexError):
        return "?"
