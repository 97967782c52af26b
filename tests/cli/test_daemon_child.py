"""A daemon ``loopbus up`` starts is not ended by the ``SIGUSR1`` that ``up`` passes on
while the daemon is still starting (before it installs its stack-dump handler)."""

from __future__ import annotations

import signal
import subprocess
import sys

from loopbus.supervisor import daemon_child

# A process that gets SIGUSR1 before it has any handler for it, as a daemon still importing.
SIGNALLED_EARLY = "import os, signal; os.kill(os.getpid(), signal.SIGUSR1); print('alive')"


def test_a_starting_daemon_outlives_sigusr1() -> None:
    kept = subprocess.run(
        [sys.executable, "-c", SIGNALLED_EARLY],
        preexec_fn=daemon_child,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (kept.returncode, kept.stdout.strip()) == (0, "alive"), kept.stderr


def test_without_it_the_signal_ends_the_process() -> None:
    """What ``daemon_child`` prevents: the default action of SIGUSR1 is to end the process."""
    ended = subprocess.run([sys.executable, "-c", SIGNALLED_EARLY], capture_output=True, timeout=60)
    assert ended.returncode == -signal.SIGUSR1
