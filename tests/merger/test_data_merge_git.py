"""Configuration files through a real `git merge` with the driver configured.

Two branches each touch loopbus.toml and package.json at the same place: plain git stops on
both files, git with the driver merges both as data, and a real key collision still stops.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import workers
from workers.entity_merge import DRIVER_NAME

PROJECT_ROOT = Path(workers.__file__).resolve().parent.parent

TOML = b"""\
# the shop's checks
[project]
id = "shop"

[[check]]
id = "tests"
pending = [
    "tests/t.py::test_cart",  # unit cart
    "tests/t.py::test_pay",
]
"""
JSON = b'{\n  "name": "shop",\n  "scripts": {\n    "test": "pytest"\n  }\n}\n'


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    env = {
        **os.environ,
        "HOME": str(repo.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.com",
        "PYTHONPATH": str(PROJECT_ROOT),  # the driver runs as `python -m loopbus…`
    }
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, check=check, timeout=60
    )


def _repo(path: Path, ours: dict[str, bytes], theirs: dict[str, bytes]) -> Path:
    """`main` (ours) and `theirs`, forked from a commit holding TOML and JSON."""
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    for name, data in (("loopbus.toml", TOML), ("package.json", JSON)):
        (path / name).write_bytes(data)
    _git(path, "add", ".")
    _git(path, "commit", "-q", "-m", "base")
    _git(path, "checkout", "-q", "-b", "theirs")
    for name, data in theirs.items():
        (path / name).write_bytes(data)
    _git(path, "commit", "-q", "-am", "theirs")
    _git(path, "checkout", "-q", "main")
    for name, data in ours.items():
        (path / name).write_bytes(data)
    _git(path, "commit", "-q", "-am", "ours")
    return path


def _with_driver(repo: Path) -> None:
    command = f"{shlex.quote(sys.executable)} -m workers.entity_merge %O %A %B %P"
    _git(repo, "config", f"merge.{DRIVER_NAME}.driver", command)
    attributes = "".join(f"*.{ext} merge={DRIVER_NAME}\n" for ext in ("toml", "json"))
    (repo / ".git" / "info" / "attributes").write_text(attributes)


# Each unit clears its own entry of the pending list and adds a script at the same place.
OURS = {
    "loopbus.toml": TOML.replace(b'    "tests/t.py::test_cart",  # unit cart\n', b""),
    "package.json": JSON.replace(b'"test": "pytest"', b'"test": "pytest",\n    "lint": "ruff"'),
}
THEIRS = {
    "loopbus.toml": TOML.replace(b'    "tests/t.py::test_pay",\n', b""),
    "package.json": JSON.replace(b'"test": "pytest"', b'"test": "pytest",\n    "types": "mypy"'),
}


def test_git_merge_with_the_driver_merges_toml_and_json_that_plain_git_conflicts_on(
    tmp_path: Path,
) -> None:
    plain = _repo(tmp_path / "plain", OURS, THEIRS)
    stopped = _git(plain, "merge", "-q", "--no-edit", "theirs", check=False)
    assert stopped.returncode != 0
    listed = _git(plain, "diff", "--name-only", "--diff-filter=U").stdout.decode().split()
    assert sorted(listed) == ["loopbus.toml", "package.json"]

    repo = _repo(tmp_path / "driver", OURS, THEIRS)
    _with_driver(repo)
    merged = _git(repo, "merge", "-q", "--no-edit", "theirs", check=False)
    assert merged.returncode == 0, merged.stderr.decode()
    toml_text = (repo / "loopbus.toml").read_bytes()
    assert toml_text == TOML.replace(
        b'pending = [\n    "tests/t.py::test_cart",  # unit cart\n    "tests/t.py::test_pay",\n]',
        b"pending = [\n]",
    )
    assert tomllib.loads(toml_text.decode())["check"][0]["pending"] == []
    assert (repo / "package.json").read_bytes() == JSON.replace(
        b'"test": "pytest"', b'"test": "pytest",\n    "lint": "ruff",\n    "types": "mypy"'
    )
    assert json.loads((repo / "package.json").read_bytes())["scripts"] == {
        "test": "pytest",
        "lint": "ruff",
        "types": "mypy",
    }


def test_git_merge_with_the_driver_stops_on_one_json_key_set_two_ways(tmp_path: Path) -> None:
    ours = {"package.json": JSON.replace(b'"pytest"', b'"pytest -q"')}
    theirs = {"package.json": JSON.replace(b'"pytest"', b'"pytest -x"')}
    repo = _repo(tmp_path / "driver", ours, theirs)
    _with_driver(repo)
    merged = _git(repo, "merge", "-q", "--no-edit", "theirs", check=False)
    assert merged.returncode != 0
    assert b"conflict in key scripts.test (both-modified)" in merged.stderr
    assert b"<<<<<<< ours (key scripts.test)\n" in (repo / "package.json").read_bytes()
