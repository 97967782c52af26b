"""`loopbus worker NAME` run beside `loopbus up` finds the system credential as every
command finds its role's (`./.loopbus/creds/`, docs/cli.md): it connected without one
and the server refused it, while `loopbus status` from the same folder worked."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from securekit import start_secured

LOOPBUS = [sys.executable, "-m", "loopbus.cli"]


def test_a_worker_beside_up_connects_with_the_system_credential(tmp_path: Path) -> None:
    secured = start_secured(tmp_path / ".loopbus")  # where `loopbus up` keeps them
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPBUS_")}
    worker = subprocess.Popen(
        [*LOOPBUS, "worker", "projector", "--nats-url", secured.url],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        healthy = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and worker.poll() is None:
            healthy = subprocess.run(
                [*LOOPBUS, "health", "projector", "--nats-url", secured.url],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            if healthy.returncode == 0:
                break
            time.sleep(0.5)
        assert worker.poll() is None, worker.communicate(timeout=30)[1]
        assert healthy is not None and healthy.returncode == 0, healthy
    finally:
        if worker.poll() is None:
            worker.terminate()
            worker.communicate(timeout=30)
        secured.server.stop()
