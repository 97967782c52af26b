"""Run the real ``loopbus`` command line against the test server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def loopbus(
    *args: str, url: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """One ``loopbus`` command run to completion against the test server."""
    return subprocess.run(
        [sys.executable, "-m", "loopbus.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ | {"LOOPBUS_NATS_URL": url} | (env or {}),
        stdin=subprocess.DEVNULL,
        cwd=cwd,
        check=False,
    )
