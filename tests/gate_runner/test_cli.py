"""``loopbus gate run`` as a real subprocess: outcomes, cache, --json, and exit codes 0/1/2."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gate_repos import LINT_CHECK, GitRepo, config

OK_CHECK = (
    '\n[[check]]\nid = "ok"\ncommand = "python -c \'pass\'"\nparser = "exit-code"\ntimeout = 30\n'
)


def gate_run(url: str, data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "loopbus.cli",
            "gate",
            "run",
            "--nats-url",
            url,
            "--data-dir",
            str(data),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def lines(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


async def test_green_then_cached_with_json(
    git: Callable[[str], GitRepo], nats_url: str, tmp_path: Path, project: str
) -> None:
    """All green exits 0; the second run is served from the cache; --json has the fields."""
    repo = git("repo")
    repo.commit({"loopbus.toml": config(project, OK_CHECK + LINT_CHECK), "a.py": "X = 1\n"})
    first = gate_run(nats_url, tmp_path / "data", "--repo", str(repo.path))
    assert first.returncode == 0, first.stderr
    assert "ran" in first.stdout and "suite: pass, green" in first.stdout
    second = gate_run(nats_url, tmp_path / "data", "--repo", str(repo.path), "--json")
    assert second.returncode == 0, second.stderr
    rows = lines(second)
    assert [r["check"] for r in rows] == ["ok", "lint"]
    for row in rows:
        assert row["outcome"] == "pass" and row["cached"] is True
        assert row["tree"] == repo.tree_of(repo.head or "") and row["findings"] == []
        assert isinstance(row["duration_s"], float)


async def test_red_exits_1_and_prints_findings(
    git: Callable[[str], GitRepo], nats_url: str, tmp_path: Path, project: str
) -> None:
    """Any red check exits 1; each finding is shown with its target."""
    repo = git("repo")
    repo.commit({"loopbus.toml": config(project, OK_CHECK + LINT_CHECK), "a.py": "import os\n"})
    done = gate_run(nats_url, tmp_path / "data", "--repo", str(repo.path))
    assert done.returncode == 1, done.stderr
    assert "code:a.py:1-1" in done.stdout and "F401" in done.stdout
    only_ok = gate_run(nats_url, tmp_path / "data", "--repo", str(repo.path), "--check", "ok")
    assert only_ok.returncode == 0 and "lint" not in only_ok.stdout


async def test_commit_option_gates_an_older_commit(
    git: Callable[[str], GitRepo], nats_url: str, tmp_path: Path, project: str
) -> None:
    """--commit names the commit to gate; HEAD is only the default."""
    repo = git("repo")
    old = repo.commit({"loopbus.toml": config(project, LINT_CHECK), "a.py": "X = 1\n"})
    repo.change(a_DOT_py="import os\n")
    done = gate_run(
        nats_url, tmp_path / "data", "--repo", str(repo.path), "--commit", old, "--json"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert lines(done)[0]["commit"] == old


@pytest.mark.parametrize(
    ("setup", "args", "needle"),
    [
        pytest.param("none", [], "not a git repository", id="not-a-repo"),
        pytest.param(
            "ok",
            ["--check", "nope"],
            "no such check; this project's checks: ok",
            id="unknown-check",
        ),
        pytest.param("ok", ["--commit", "f" * 40], "names no commit", id="unknown-commit"),
        pytest.param("bad-toml", [], "check[0].parser = 'pytst' is not valid", id="invalid-config"),
        pytest.param("no-toml", [], "has no loopbus.toml", id="no-config"),
        pytest.param("weakens", [], "profile check cli/cli-help", id="weakens-profile"),
    ],
)
async def test_usage_errors_exit_2_with_one_line(
    git: Callable[[str], GitRepo],
    nats_url: str,
    tmp_path: Path,
    project: str,
    setup: str,
    args: list[str],
    needle: str,
) -> None:
    """A usage mistake is one line on stderr and exit code 2, with nothing run."""
    repo_path = tmp_path / "plain"
    repo_path.mkdir()
    if setup != "none":
        repo = git("repo")
        repo_path = repo.path
        text = {
            "ok": config(project, OK_CHECK),
            "bad-toml": config(project, OK_CHECK.replace("exit-code", "pytst")),
            "weakens": config(project, OK_CHECK.replace('"ok"', '"cli-help"')).replace(
                "\n\n", '\ncapabilities = ["cli"]\n', 1
            ),
        }.get(setup)
        repo.commit({"loopbus.toml": text} if text else {"README": "x\n"})
    done = gate_run(nats_url, tmp_path / "data", "--repo", str(repo_path), *args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("loopbus: error: ") and done.stderr.count("\n") == 1
    assert needle in done.stderr
