"""``loopbus gate run`` against the bus a real ``loopbus up`` runs, with its credentials:
the documented example works with no --creds, and any credential but the system's is
refused in one line naming the file that would do (gate results are facts)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from gate_repos import GitRepo, config

from bus import free_port

pytestmark = pytest.mark.slow

LOOPBUS = [sys.executable, "-m", "loopbus.cli"]
OK_CHECK = (
    '\n[[check]]\nid = "ok"\ncommand = "python -c \'pass\'"\nparser = "exit-code"\ntimeout = 30\n'
)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPBUS_")}
    return {**env, **extra}


@pytest.fixture
def up_here(tmp_path: Path) -> Iterator[str]:
    """``loopbus up`` started in ``tmp_path`` as a new user starts it (its data in
    ``./.loopbus``, credentials required); yields the URL it prints."""
    up = subprocess.Popen(
        [*LOOPBUS, "up", "--port", str(free_port()), "--no-web"],
        cwd=tmp_path,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert up.stdout is not None
    text = ""
    try:
        for line in up.stdout:
            text += line
            if "press Ctrl-C to stop" in line or "error" in line:
                break
        match = re.search(r"nats://[\d.]+:\d+", text)
        assert match and up.poll() is None, text
        yield match.group(0)
    finally:
        up.send_signal(signal.SIGTERM)
        up.communicate(timeout=60)


def gate_run(cwd: Path, url: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    # LOOPBUS_NATS_URL is what up tells the other terminal to export (None: not exported);
    # the key folder keeps a run without --data-dir from making a key in the real home.
    env = clean_env(LOOPBUS_KEY_DIR=str(cwd / "keys"))
    if url is not None:
        env["LOOPBUS_NATS_URL"] = url
    return subprocess.run(
        [*LOOPBUS, "gate", "run", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_gate_run_beside_up_publishes_with_the_system_credential(
    git: Callable[[str], GitRepo], up_here: str, tmp_path: Path, project: str
) -> None:
    """docs/gates.md's example, run where up runs: green, exit 0; again with no
    --data-dir (the .loopbus up keeps here is found), answered from the shared cache."""
    repo = git("calc")
    repo.commit({"loopbus.toml": config(project, OK_CHECK), "a.py": "X = 1\n"})
    done = gate_run(tmp_path, up_here, "--repo", "calc", "--data-dir", ".loopbus")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "suite: pass, green" in done.stdout and "ran" in done.stdout
    again = gate_run(tmp_path, up_here, "--repo", "calc")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "cached" in again.stdout
    # From another folder, told only --data-dir: that directory's credential goes to that
    # directory's up (which serves on no default port here), never to whatever is on 4222.
    data_dir = str(tmp_path / ".loopbus")
    with tempfile.TemporaryDirectory() as elsewhere:  # no .loopbus above it to find
        third = gate_run(
            Path(elsewhere), None, "--repo", str(tmp_path / "calc"), "--data-dir", data_dir
        )
    assert third.returncode == 0, third.stdout + third.stderr
    assert "cached" in third.stdout


@pytest.mark.parametrize("role", ["agent", "operator"])
def test_another_credential_is_refused_in_one_line_naming_the_system_one(
    git: Callable[[str], GitRepo], up_here: str, tmp_path: Path, project: str, role: str
) -> None:
    """An agent's or operator's credential may not publish facts: one line, exit 2, before
    any check runs, naming the option, the file and the system credential to pass."""
    repo = git("calc")
    repo.commit({"loopbus.toml": config(project, OK_CHECK), "a.py": "X = 1\n"})
    named = f".loopbus/creds/{role}.json"
    done = gate_run(tmp_path, up_here, "--repo", "calc", "--data-dir", ".loopbus", "--creds", named)
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"loopbus: error: --creds {named} is the {role} credential"), line
    assert "--creds .loopbus/creds/system.json" in line
    assert done.stdout == ""
