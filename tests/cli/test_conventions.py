"""The conventions every command keeps: --version, an example under every --help, a default
project, the project named by tail, Ctrl-C exiting 130, progress only on a terminal, and bad
input as one line."""

from __future__ import annotations

import os
import pty
import re
import shlex
import signal
import subprocess
import sys
from importlib.metadata import version as distribution_version
from pathlib import Path
from typing import Any

import pytest

from loopbus.cli import build_parser
from loopbus.errors import UsageError
from loopbus.examples import EXAMPLES, subparsers
from loopbus.settings import default_project, resolve_project

from .conftest import LOOPBUS, loopbus

FINDING = (
    "--producer",
    "reviewer",
    "--target",
    "code:a.py:1",
    "--severity",
    "low",
    "--message",
    "m",
)
SHELL_OPERATORS = {">", ">>", "|", "<"}


def test_version_is_the_installed_distribution() -> None:
    """`loopbus --version` prints the installed version and exits 0."""
    done = loopbus("--version")
    assert (done.code, done.out) == (0, f"loopbus {distribution_version('loopbus')}\n")


def test_every_help_has_examples_that_parse() -> None:
    """Every command and group shows examples under --help, and each example (up to a shell
    redirect) is accepted by the parser it documents."""
    parser = build_parser()
    for path, sub in subparsers(parser):
        assert EXAMPLES.get(path), f"`loopbus {path}` has no example"
        assert "\nexamples:\n  $ loopbus" in sub.format_help(), path
        for line in EXAMPLES[path]:
            words = shlex.split(line)
            cut = next((i for i, w in enumerate(words) if w in SHELL_OPERATORS), len(words))
            assert words[: 1 + len(path.split())] == ["loopbus", *path.split()], line
            try:
                build_parser().parse_args(words[1:cut])
            except SystemExit as exc:
                pytest.fail(f"example does not parse ({exc.code}): {line}")
    shown = loopbus("tail", "--help")
    assert shown.code == 0 and "  $ loopbus tail --all-projects --kind finding" in shown.out


# -- the default project -----------------------------------------------------------------


def write_config(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "loopbus.toml").write_text(body)
    return folder


def test_project_comes_from_env_then_the_nearest_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$LOOPBUS_PROJECT wins over loopbus.toml, which is found from any folder below it;
    with neither there is no default."""
    monkeypatch.delenv("LOOPBUS_PROJECT", raising=False)
    nested = write_config(tmp_path / "repo", '[project]\nid = "shop"\n') / "src" / "deep"
    nested.mkdir(parents=True)
    assert default_project(nested) == "shop"
    assert default_project(tmp_path) is None
    monkeypatch.setenv("LOOPBUS_PROJECT", "from-env")
    assert default_project(nested) == "from-env"


@pytest.mark.parametrize(
    ("env", "config", "needle"),
    [
        pytest.param("a.b", None, "$LOOPBUS_PROJECT 'a.b' is not a valid project id", id="env"),
        pytest.param(None, "[project\nid=", "loopbus.toml: not valid TOML", id="toml"),
        pytest.param(None, "[check]\n", "loopbus.toml has no [project] id", id="no-id"),
        pytest.param(
            None,
            '[project]\nid = "a b"\n',
            "[project] id 'a b' is not a valid project id",
            id="bad-id",
        ),
        pytest.param(None, None, "no project: pass --project ID, set LOOPBUS_PROJECT", id="none"),
    ],
)
def test_a_project_that_cannot_be_found_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str | None, config: str | None,
    needle: str,
) -> None:  # fmt: skip
    """Each way the default project can fail names the source and the fix in one line."""
    monkeypatch.delenv("LOOPBUS_PROJECT", raising=False)
    if env is not None:
        monkeypatch.setenv("LOOPBUS_PROJECT", env)
    if config is not None:
        write_config(tmp_path, config)
    args = build_parser().parse_args(["status"])
    with pytest.raises(UsageError) as refused:
        resolve_project(args, cwd=tmp_path)
    assert needle in str(refused.value) and "\n" not in str(refused.value)
    done = subprocess.run(
        [*LOOPBUS, "status"], capture_output=True, text=True, cwd=tmp_path, timeout=60,
        env=os.environ | ({"LOOPBUS_PROJECT": env} if env else {}), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and needle in done.stderr


def run_in(folder: Path, *args: str, url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LOOPBUS_PROJECT"}
    return subprocess.run(
        [*LOOPBUS, *args, "--nats-url", url], capture_output=True, text=True, cwd=folder,
        env=env, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_commands_use_the_repositorys_project(nats_url: str, project: str, tmp_path: Path) -> None:
    """In a repository whose loopbus.toml names the project, report, replay and tail need no
    --project; tail then shows that project only, and --all-projects names each line's."""
    repo = write_config(tmp_path / "repo", f'[project]\nid = "{project}"\n')
    (repo / "src").mkdir()
    assert (
        run_in(repo / "src", "report", "finding", "--new", *FINDING, url=nats_url).returncode == 0
    )
    other = f"{project}o"
    done = run_in(repo, "report", "finding", "--new", "--project", other, *FINDING, url=nats_url)
    assert done.returncode == 0, done.stderr
    replay = run_in(repo / "src", "replay", "--state-only", url=nats_url)
    assert replay.returncode == 0 and f"state of {project} through seq" in replay.stdout
    mine = run_in(repo, "tail", "--no-follow", url=nats_url).stdout.splitlines()
    assert len(mine) == 1 and project not in mine[0], "filtered to one project: no column"
    every = run_in(repo, "tail", "--no-follow", "--all-projects", "--kind", "finding", url=nats_url)
    named = [line.split()[2] for line in every.stdout.splitlines()]
    assert named.count(project) == 1 and named.count(other) == 1
    line = re.compile(rf"^#\d+\s+\d\d:\d\d:\d\d {project} finding\.raised low reviewer ")
    assert any(line.match(text) for text in every.stdout.splitlines()), every.stdout
    both = run_in(repo, "tail", "--no-follow", "--project", project, "--all-projects", url=nats_url)
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


# -- Ctrl-C ------------------------------------------------------------------------------


def as_at_a_terminal() -> None:
    """In the child, before it runs: Ctrl-C's signal is not ignored, as it is not at a
    terminal. A test run started in the background (``cmd &`` in a script) hands its
    children SIGINT ignored, and Python then installs no KeyboardInterrupt at all."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupted(process: subprocess.Popen[str]) -> tuple[int, str]:
    process.send_signal(signal.SIGINT)
    _out, err = process.communicate(timeout=30)
    return process.returncode, err


def test_ctrl_c_stops_a_following_tail_with_130(nats_url: str, project: str) -> None:
    """SIGINT to a following `loopbus tail` ends it with status 130 and nothing on stderr."""
    opened = loopbus(
        "report", "finding", "--new", "--project", project, *FINDING, "--nats-url", nats_url
    )  # a project with an event: tail of an unknown one is refused before it follows
    assert opened.code == 0, opened.err
    process = subprocess.Popen(
        [*LOOPBUS, "tail", "--project", project, "--nats-url", nats_url],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        preexec_fn=as_at_a_terminal,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        assert "finding.raised" in process.stdout.readline(), "tail is following"
        code, err = interrupted(process)
    finally:
        process.kill()
    assert (code, err) == (130, "")


def test_ctrl_c_stops_a_daemon_run_by_hand_with_130(nats_url: str) -> None:
    """A daemon in the foreground (what `loopbus worker` runs) exits 130 on Ctrl-C."""
    process = subprocess.Popen(
        [sys.executable, "-m", "workers.watchdog", "--nats-url", nats_url],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        preexec_fn=as_at_a_terminal,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        while "daemon.started" not in (line := process.stderr.readline()):
            assert line, "the daemon ended before it started"
        code, err = interrupted(process)
    finally:
        process.kill()
    assert code == 130 and "Traceback" not in err


@pytest.mark.slow
def test_ctrl_c_stops_up_in_order_with_130(up_factory: Any) -> None:
    """Ctrl-C stops up in order (every daemon, then NATS) and exits 130; SIGTERM stays 0."""
    up = up_factory()
    assert up.stop(signal.SIGINT) == 130
    assert any("every daemon stopped" in line for line in up.lines)


# -- progress ----------------------------------------------------------------------------


def stderr_on_a_terminal(*args: str) -> tuple[int, str, str]:
    """Run loopbus with stderr on a pseudo-terminal; (exit code, stdout, terminal text)."""
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [*LOOPBUS, *args], stdout=subprocess.PIPE, stderr=follower, stdin=subprocess.DEVNULL,
            timeout=120, text=True,
        )  # fmt: skip
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # closed: all read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(leader)
    return done.returncode, done.stdout, seen.decode()


def test_replay_shows_progress_only_on_a_terminal(nats_url: str, project: str) -> None:
    """replay draws `replay P: seq N/M` on a terminal's stderr and erases it; piped, stderr
    stays empty; stdout is the same either way."""
    for _ in range(3):
        loopbus(
            "report", "finding", "--new", "--project", project, *FINDING, "--nats-url", nats_url
        )
    code, out, terminal = stderr_on_a_terminal(
        "replay", "--project", project, "--nats-url", nats_url
    )
    assert code == 0
    drawn = re.findall(rf"replay {project}: seq ([\d,]+)/([\d,]+)", terminal)
    assert drawn and drawn[-1][0] == drawn[-1][1], terminal
    assert terminal.endswith("\r\x1b[K"), "the line is erased at the end"
    piped = loopbus("replay", "--project", project, "--nats-url", nats_url)
    assert piped.code == 0 and piped.err == ""
    assert piped.out == out.replace("\r\n", "\n")


# -- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        pytest.param(("completion", "tcsh"), "invalid choice: 'tcsh'", id="shell"),
        pytest.param(
            ("findings", "export", "--format", "csv"), "invalid choice: 'csv'", id="format"
        ),
        pytest.param(
            ("tail", "--producer", "nobody"), "--producer 'nobody' is not one of", id="producer"
        ),
    ],
)
def test_bad_input_is_one_line(args: tuple[str, ...], needle: str) -> None:
    """A bad value is one line naming it, exit 2, never a traceback."""
    done = loopbus(*args, env={"LOOPBUS_NATS_URL": "nats://127.0.0.1:1"})
    assert done.code == 2 and needle in done.err and done.err.count("\n") == 1, done.err


@pytest.mark.parametrize("value", ["", "nats://10.0.0.9:4300"])
def test_a_command_and_a_daemon_read_the_server_url_alike(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """``$LOOPBUS_NATS_URL`` set (even empty) means the same server to a command and to a
    daemon: the daemons read it with ``get(ENV, DEFAULT)`` while the CLI read it with
    ``get(ENV) or DEFAULT``, so an empty variable sent daemons to no server at all."""
    from bus.names import DEFAULT_URL, NATS_URL_ENV
    from loopbus.settings import nats_url
    from workers.cli import daemon_parser

    monkeypatch.setenv(NATS_URL_ENV, value)
    daemon = daemon_parser("units", "test").parse_args([]).nats_url
    command = nats_url(build_parser().parse_args(["status", "--project", "p"]))
    assert daemon == command == (value or DEFAULT_URL)
