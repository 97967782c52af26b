"""``loopbus gate run`` as a real subprocess: outcomes, cache, --json, and exit codes 0/1/2."""

from __future__ import annotations

import json
import os
import socket
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


def user_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment with a private home and none of the key-location variables set."""
    env = {k: v for k, v in os.environ.items() if k not in ("LOOPBUS_KEY_DIR", "XDG_DATA_HOME")}
    env.update(HOME=str(home), **extra)
    return env


def gate_run_in(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``loopbus gate run`` started inside ``cwd`` with ``env``, without ``--data-dir``."""
    return subprocess.run(
        [sys.executable, "-m", "loopbus.cli", "gate", "run", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"nats://127.0.0.1:{port}"


async def test_key_defaults_to_the_user_data_folder_never_the_repository(
    git: Callable[[str], GitRepo], nats_url: str, tmp_path: Path, project: str
) -> None:
    """Run inside the target repository, the key goes to ~/.local/share/loopbus/keys
    (mode 0600, folder 0700) and the repository's working tree gains nothing."""
    repo = git("repo")
    repo.commit({"loopbus.toml": config(project, OK_CHECK)})
    before = sorted(p.name for p in repo.path.iterdir())
    env = user_env(tmp_path / "home")
    done = gate_run_in(repo.path, env, "--nats-url", nats_url)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in repo.path.iterdir()) == before
    folder = tmp_path / "home" / ".local" / "share" / "loopbus" / "keys"
    assert (folder / "gate-runner.key").stat().st_mode & 0o777 == 0o600
    assert folder.stat().st_mode & 0o777 == 0o700


async def test_no_key_is_made_when_the_bus_is_unreachable(
    git: Callable[[str], GitRepo], tmp_path: Path, project: str
) -> None:
    """A run that cannot reach NATS fails in one line and leaves no key anywhere."""
    repo = git("repo")
    repo.commit({"loopbus.toml": config(project, OK_CHECK)})
    env = user_env(tmp_path / "home", XDG_DATA_HOME=str(tmp_path / "xdg"))
    done = gate_run_in(repo.path, env, "--nats-url", closed_port_url())
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert not (tmp_path / "xdg").exists() and not (tmp_path / "home").exists()
    assert not (repo.path / ".loopbus").exists()


async def test_gate_runner_daemon_makes_no_key_before_the_bus_answers(
    git: Callable[[str], GitRepo], tmp_path: Path, project: str
) -> None:
    """The daemon's start-up checks read an existing key but never create one: with NATS
    unreachable it exits 1 and leaves nothing behind."""
    repo = git("repo")
    repo.commit({"loopbus.toml": config(project, OK_CHECK)})
    env = user_env(tmp_path / "home", LOOPBUS_KEY_DIR=str(tmp_path / "keys"))
    url = closed_port_url()
    done = subprocess.run(
        [sys.executable, "-m", "workers.gate_runner", "--repo", ".", "--nats-url", url],
        cwd=repo.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert not (tmp_path / "keys").exists() and not (repo.path / ".loopbus").exists()


@pytest.mark.parametrize(
    "data_dir",
    [
        pytest.param("/proc/x", id="proc"),
        pytest.param("a-file", id="a-file-not-a-folder"),
    ],
)
async def test_unusable_data_dir_is_one_line_exit_2(
    git: Callable[[str], GitRepo], nats_url: str, tmp_path: Path, project: str, data_dir: str
) -> None:
    """A --data-dir where no key can be kept is one line naming the key's path and what to
    do, exit 2, never a traceback."""
    repo = git("repo")
    repo.commit({"loopbus.toml": config(project, OK_CHECK)})
    (tmp_path / "a-file").write_text("x\n")
    where = Path(data_dir) if data_dir.startswith("/") else tmp_path / data_dir
    done = gate_run(nats_url, where, "--repo", str(repo.path))
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(
        f"loopbus: error: cannot keep the runner key at {where}/keys/gate-runner.key: "
    )
    assert "--data-dir" in done.stderr and "LOOPBUS_KEY_DIR" in done.stderr


async def test_progress_is_drawn_on_a_terminal_only(
    git: Callable[[str], GitRepo], nats_url: str, tmp_path: Path, project: str
) -> None:
    """With stderr on a terminal, gate run draws each finished check (`gate run: checks 2/2
    (100%)`) and erases the line; piped, stderr carries no progress; stdout is the same."""
    import pty

    repo = git("repo")
    repo.commit({"loopbus.toml": config(project, OK_CHECK + LINT_CHECK), "a.py": "X = 1\n"})
    command = [
        sys.executable, "-m", "loopbus.cli", "gate", "run", "--nats-url", nats_url,
        "--data-dir", str(tmp_path / "data"), "--repo", str(repo.path),
    ]  # fmt: skip
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            command, stdout=subprocess.PIPE, stderr=follower, stdin=subprocess.DEVNULL,
            text=True, timeout=120, check=False,
        )  # fmt: skip
        os.close(follower)
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed: all of it was read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0, done.stdout
    terminal = drawn.decode()
    assert "gate run: checks 0/2 (0%)" in terminal
    assert "gate run: checks 2/2 (100%)" in terminal
    assert " ok pass (" in terminal and " lint pass (" in terminal
    assert terminal.endswith("\r\x1b[K")
    piped = gate_run(nats_url, tmp_path / "data", "--repo", str(repo.path))
    assert piped.returncode == 0 and "gate run:" not in piped.stderr
    assert piped.stdout.splitlines()[0] == done.stdout.splitlines()[0]
