"""``loopbus creds add`` writes only into a data directory that ``loopbus up`` (or
``provision --creds-out``) made: elsewhere it would hand out a seed no server reads."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bus import free_port

LOOPBUS = [sys.executable, "-m", "loopbus"]


def loopbus(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPBUS_")}
    return subprocess.run(
        [*LOOPBUS, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def add(cwd: Path, data_dir: Path, principal: str) -> subprocess.CompletedProcess[str]:
    where = ("--data-dir", str(data_dir))
    return loopbus(cwd, "creds", "add", *where, "--role", "agent", "--principal", principal)


def assert_refused(done: subprocess.CompletedProcess[str], data_dir: Path) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"loopbus: error: --data-dir {str(data_dir)!r} is not a loopbus data directory (it has "
        "no creds/ folder, which `loopbus up` or `loopbus provision --creds-out DIR` makes "
        "there): run `loopbus up` there first, or pass --data-dir with the data directory "
        "`loopbus up` printed"
    ]


@pytest.mark.slow
def test_creds_add_writes_into_the_data_directory_up_runs_on_and_nowhere_else(
    tmp_path: Path,
) -> None:
    """Beside a running `loopbus up`: its data directory gets the file (and the server
    re-reads its users); a mistyped one, absent or empty, is refused and left as it was."""
    data_dir = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPBUS_")}
    up = subprocess.Popen(
        [*LOOPBUS, "up", "--port", str(free_port()), "--data-dir", str(data_dir)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert up.stdout is not None
    try:
        text = ""
        for line in up.stdout:
            text += line
            if "press Ctrl-C to stop" in line or "error" in line:
                break
        assert re.search(r"nats://[\d.]+:\d+", text), text

        added = add(tmp_path, data_dir, "b10")
        assert added.returncode == 0, added.stderr
        assert (data_dir / "creds" / "agent-b10.json").is_file()
        assert "reloaded its users" in added.stdout

        absent = tmp_path / "nonexistent"
        assert_refused(add(tmp_path, absent, "b11"), absent)
        assert not absent.exists()
        empty = tmp_path / "empty"
        empty.mkdir()
        assert_refused(add(tmp_path, empty, "b11"), empty)
        assert list(empty.iterdir()) == []
    finally:
        up.send_signal(signal.SIGTERM)
        up.communicate(timeout=60)


def test_creds_add_writes_into_a_deployments_secrets_not_into_its_creds_folder(
    tmp_path: Path,
) -> None:
    """A deployment's secrets folder (`provision --creds-out`) is one too (docs/deploy.md);
    its creds/ folder named by mistake is refused rather than given a creds/ of its own."""
    made = loopbus(tmp_path, "provision", "--creds-out", "secrets")
    assert made.returncode == 0, made.stderr
    secrets = tmp_path / "secrets"
    added = add(tmp_path, secrets, "b10")
    assert added.returncode == 0, added.stderr
    assert (secrets / "creds" / "agent-b10.json").is_file()
    assert "the server admits it when it starts" in added.stdout

    inner = secrets / "creds"
    assert_refused(add(tmp_path, inner, "b11"), inner)
    assert not (inner / "creds").exists()


def test_creds_add_inside_the_repository_finds_the_data_directory_above(
    tmp_path: Path,
) -> None:
    """`loopbus up --repo calc` keeps its data directory beside calc/; run inside calc/,
    `creds add` finds it as the other commands do, instead of refusing calc/.loopbus."""
    (tmp_path / ".loopbus" / "creds").mkdir(parents=True)
    calc = tmp_path / "calc"
    calc.mkdir()
    added = loopbus(calc, "creds", "add", "--role", "agent", "--principal", "b10")
    assert added.returncode == 0, added.stderr
    assert (tmp_path / ".loopbus" / "creds" / "agent-b10.json").is_file()
    assert not (calc / ".loopbus").exists()
    assert "the server admits it when it starts" in added.stdout


def test_creds_add_with_no_data_directory_found_is_refused(tmp_path: Path) -> None:
    """Found nowhere (no .loopbus with creds/ here or above): refused, nothing written."""
    (tmp_path / ".loopbus").mkdir()  # no creds/: not one `up` made
    done = loopbus(tmp_path, "creds", "add", "--role", "agent", "--principal", "b10")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        "loopbus: error: the default data directory '.loopbus' (no --data-dir or "
        "LOOPBUS_DATA_DIR, and no .loopbus with a creds/ folder here or in a folder above) "
        "is not a loopbus data directory (it has no creds/ folder, which `loopbus up` or "
        "`loopbus provision --creds-out DIR` makes there): run `loopbus up` there first, or "
        "pass --data-dir with the data directory `loopbus up` printed"
    ]
    assert list((tmp_path / ".loopbus").iterdir()) == []
