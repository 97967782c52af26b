"""A daemon as a real process for tests and benchmarks: started in a session of its own
(so a kill reaches everything it started, a check mid-run too), its output in a log file
the test reads to see it caught up or to show why it failed."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path


class DaemonProcess:
    def __init__(self, args: list[str], log: Path, *, stop_wait_s: float = 30) -> None:
        self.args = args
        self.log = log
        self.stop_wait_s = stop_wait_s
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as sink:
            self.process = subprocess.Popen(
                self.args,
                stdout=sink,
                stderr=sink,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def ready(self) -> bool:
        """It has read the log to its end (and decides from now on)."""
        return self.log.exists() and b"daemon.caught_up" in self.log.read_bytes()

    def kill(self) -> None:
        """SIGKILL the daemon and everything it started."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not ended within ``stop_wait_s``."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=self.stop_wait_s)
            except subprocess.TimeoutExpired:
                self.kill()

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
