"""CPU-bound processes beside a benchmark (``--hog N``): the loop is never alone on a
developer's laptop or a CI runner, so its figures are measured with other work running too."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def busy_loops(count: int) -> Iterator[None]:
    """Run ``count`` busy-loop processes for the body's duration, killed when it ends."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
