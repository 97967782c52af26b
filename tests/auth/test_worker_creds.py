"""`loopbus worker NAME` run beside `loopbus up` finds the system credential as every
command finds its role's (`./.loopbus/creds/`, docs/cli.md): it connected without one
and the server refused it, while `loopbus status` from the same folder worked."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from securekit import start_secured

from loopbus import served_url

LOOPBUS = [sys.executable, "-m", "loopbus.cli"]


def assert_runs_healthy(
    worker: list[str], health: list[str], cwd: Path, env: dict[str, str], health_env: dict[str, str]
) -> None:
    """Start `loopbus worker …` and wait until `loopbus health …` says its beacon is fresh
    (while it still runs), then stop it."""
    process = subprocess.Popen(
        [*LOOPBUS, "worker", *worker],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        healthy = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and process.poll() is None:
            healthy = subprocess.run(
                [*LOOPBUS, "health", *health],
                cwd=cwd,
                env=health_env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            if healthy.returncode == 0:
                break
            time.sleep(0.5)
        assert process.poll() is None, process.communicate(timeout=30)[1]
        assert healthy is not None and healthy.returncode == 0, healthy
    finally:
        if process.poll() is None:
            process.terminate()
            process.communicate(timeout=30)


@pytest.mark.parametrize("told_where", [True, False], ids=["url-given", "url-from-up"])
def test_a_worker_beside_up_connects_with_the_system_credential(
    tmp_path: Path, told_where: bool
) -> None:
    secured = start_secured(tmp_path / ".loopbus")  # where `loopbus up` keeps them
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPBUS_")}
    where = ["--nats-url", secured.url]
    stand_in = open(tmp_path / ".loopbus" / served_url.LOCK_FILE, "a+")  # noqa: SIM115
    if not told_where:
        # As `loopbus up` records the server it runs and holds its data directory (this
        # test's process stands in for it): worker and health find it, not the default port.
        fcntl.flock(stand_in, fcntl.LOCK_EX | fcntl.LOCK_NB)
        served_url.write(tmp_path / ".loopbus", secured.url)
        where = []
    try:
        assert_runs_healthy(["projector", *where], ["projector", *where], tmp_path, env, env)
    finally:
        secured.server.stop()
        stand_in.close()


def test_a_worker_given_its_own_data_dir_uses_that_directorys_credential_and_server(
    tmp_path: Path,
) -> None:
    """`loopbus worker dispatcher --data-dir D`, run from a folder with no `.loopbus`:
    the credential and the server are D's (it looked beside the current folder only)."""
    data_dir = tmp_path / "elsewhere" / ".loopbus"
    secured = start_secured(data_dir)
    here = tmp_path / "work"
    here.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPBUS_")}
    stand_in = open(data_dir / served_url.LOCK_FILE, "a+")  # noqa: SIM115
    fcntl.flock(stand_in, fcntl.LOCK_EX | fcntl.LOCK_NB)
    served_url.write(data_dir, secured.url)
    try:
        assert_runs_healthy(
            ["dispatcher", "--data-dir", str(data_dir)],
            ["dispatcher"],
            here,
            env,
            env | {"LOOPBUS_DATA_DIR": str(data_dir)},
        )
    finally:
        secured.server.stop()
        stand_in.close()
