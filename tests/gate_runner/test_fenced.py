"""A check runs the agents' code (a test, a ``conftest.py``, what they import), so the gate
runner runs it in the agent sandbox: the data directory's secrets, the runner's own signing
key and the shared repository do not exist for it, while the check still sees its
checkout and loopbus's interpreter (a pytest gate passes as before)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from gate_repos import GitRepo, config
from gatekit import run_commit

from workers.gates.fenced import FencedExecutor, _only_plain_files
from workers.gates.runner import GateRunner

# What a hostile test tries from inside a check: each line prints what it could reach.
PROBE = """\
import json, os, pathlib, sys
found = {}
for name in sys.argv[1:]:
    path = pathlib.Path(name)
    try:
        found[name] = path.read_text()[:40] if path.is_file() else sorted(os.listdir(path))
    except OSError as exc:
        found[name] = type(exc).__name__
print(json.dumps(found))
reached = [n for n, v in found.items() if v not in ("FileNotFoundError", "PermissionError")]
sys.exit(1 if reached else 0)
"""


async def _sandbox_or_skip() -> None:
    problem = await FencedExecutor().available()
    if problem is not None:
        pytest.skip(f"the agent sandbox cannot run checks here: {problem}")


async def _probe(
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    targets: list[Path],
    *,
    fenced: bool,
) -> str:
    repo = git("repo")
    command = " ".join(["python", "probe.py", *map(str, targets)])
    checks = f'\n[[check]]\nid = "probe"\ncommand = "{command}"\nparser = "exit-code"\n'
    repo.commit({"loopbus.toml": config(project, checks), "probe.py": PROBE})
    runner = make_runner(repo, fenced=fenced)
    run = (await run_commit(runner)).check("probe")
    return run.outcome


def _secrets(tmp_path: Path) -> tuple[Path, Path]:
    """A data directory as ``up`` makes it (0700, its credential 0600) and a sibling's folder."""
    data = tmp_path / "data-dir"
    (data / "creds").mkdir(parents=True)
    data.chmod(0o700)
    secret = data / "creds" / "system.json"
    secret.write_text('{"seed": "SUAM-not-for-agents"}')
    secret.chmod(0o600)
    sibling = tmp_path / "sibling-checkout"
    sibling.mkdir()
    (sibling / "theirs.py").write_text("x = 1\n")
    return secret, sibling


async def test_a_check_cannot_reach_the_data_dir_the_key_or_the_shared_repository(
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    tmp_path: Path,
) -> None:
    await _sandbox_or_skip()
    secret, sibling = _secrets(tmp_path)
    key_folder = tmp_path / "data"  # the runner's signing key (the `signer` fixture's)
    shared = tmp_path / "repo" / ".git"
    outcome = await _probe(
        git, make_runner, project, [secret, key_folder, sibling, shared], fenced=True
    )
    assert outcome == "pass", "a fenced check reached a secret, the key or another's files"


async def test_the_same_probe_reaches_them_without_the_sandbox(
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    tmp_path: Path,
) -> None:
    """The probe is real: run as the gate runner's own user, it reads them all."""
    secret, sibling = _secrets(tmp_path)
    shared = tmp_path / "repo" / ".git"
    outcome = await _probe(git, make_runner, project, [secret, sibling, shared], fenced=False)
    assert outcome == "fail"


def test_links_and_fifos_in_the_report_folder_are_dropped_before_it_is_read(
    tmp_path: Path,
) -> None:
    """The report folder is writable by the run: a FIFO named as the status file would
    block the runner's read for ever, a link would make it read what the run chose
    (``/dev/zero``). Both go before anything reads the folder; plain files stay."""
    out = tmp_path / "out"
    (out / "home").mkdir(parents=True)
    os.mkfifo(out / "status.json")
    (out / "pytest-report.json").symlink_to("/dev/zero")
    (out / "stdout").write_text("kept")
    _only_plain_files(out)
    assert sorted(p.name for p in out.iterdir()) == ["home", "stdout"]
