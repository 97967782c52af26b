"""The data directory is its owner's alone (docs/security.md): after a real ``loopbus up``
the folder is 0700 and nothing under it grants a group or other bit; ``loopbus provision
--creds-out`` leaves its folder the same way."""

from __future__ import annotations

import stat
import time
from pathlib import Path
from typing import Any

import pytest

from bus import free_port
from loopbus import scaffold

from .conftest import loopbus, start_up

pytestmark = pytest.mark.slow

OPEN_BITS = stat.S_IRWXG | stat.S_IRWXO


def shared(root: Path) -> list[str]:
    """Every entry under ``root`` (itself included) that a group or other may use."""
    found = []
    for path in [root, *root.rglob("*")]:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            continue  # a link's own mode means nothing; its target is walked if it is here
        if mode & OPEN_BITS:
            found.append(f"{path.relative_to(root.parent)} {stat.filemode(mode)}")
    return sorted(found)


def wait_for(condition: Any, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never saw {what}"
        time.sleep(0.2)


def test_up_keeps_every_file_of_its_data_directory_to_its_owner(tmp_path: Path) -> None:
    """A data directory that exists world-readable, holding a daemon log from before, is
    tightened; the server's store and log, the credentials, the signing keys, the daemon
    logs and log.json that up and its daemons write are all owner-only."""
    data = tmp_path / "data"
    (data / "logs").mkdir(parents=True)
    data.chmod(0o755)
    (data / "logs").chmod(0o755)
    old_log = data / "logs" / "projector.log"
    old_log.write_text("from an older loopbus\n")
    old_log.chmod(0o644)
    repo = scaffold.write(tmp_path / "calc")
    up = start_up("--data-dir", str(data), "--repo", str(repo), "--port", str(free_port()),
                  "--no-web")  # fmt: skip
    try:
        wait_for(lambda: any((data / "keys").glob("*.key")), "a gate runner's signing key")
        wait_for(lambda: len(list((data / "logs").glob("*.log"))) > 3, "the daemons' logs")
        wait_for(lambda: (data / "jetstream").is_dir(), "the server's store")
    finally:
        assert up.stop() == 0, "\n".join(up.lines)
    written = {p.relative_to(data).parts[0] for p in data.rglob("*")}
    assert {"creds", "keys", "logs", "jetstream", "log.json", "nats-server.log"} <= written
    assert shared(data) == []
    assert stat.S_IMODE(data.stat().st_mode) == 0o700


def test_provision_creds_out_keeps_the_secrets_folder_to_its_owner(tmp_path: Path) -> None:
    """Credentials, the CA and node certificate and nats.conf: folder 0700, files 0600,
    also when the folder was there before with wider modes."""
    folder = tmp_path / "secrets"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    result = loopbus("provision", "--creds-out", str(folder))
    assert result.code == 0, result.err
    assert {p.name for p in folder.iterdir()} == {"creds", "tls", "nats.conf"}
    assert (folder / "tls" / "ca.pem").is_file()
    assert shared(folder) == []


def test_up_refuses_a_shared_folder_as_its_data_directory(tmp_path: Path) -> None:
    """A folder with the sticky bit (like /tmp) is shared by design: up would have to make
    it 0700 for everyone, so it refuses in one line and leaves the folder as it was."""
    shared_folder = tmp_path / "shared"
    shared_folder.mkdir()
    shared_folder.chmod(0o1777)
    result = loopbus("up", "--data-dir", str(shared_folder), "--port", str(free_port()))
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    assert "is a shared folder (sticky bit, like /tmp)" in result.err
    assert stat.S_IMODE(shared_folder.stat().st_mode) == 0o1777
