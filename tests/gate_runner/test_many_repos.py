"""One gate-runner process serving two projects' repositories (``--repo`` twice), as a real
subprocess on the real server: it answers the suites of both, signed with its one key; and
a ``--repo`` it cannot serve is refused in one line, before anything connects."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_process import DaemonProcess
from gate_repos import GitRepo, config

from bus import Bus, read
from schemas import Actor, Event
from schemas.gates import GateRunRequested, GateSuiteCompleted
from workers.runtime import check_health

WAIT_S = 90.0
OK_CHECK = (
    '\n[[check]]\nid = "ok"\ncommand = "python -c \'pass\'"\nparser = "exit-code"\ntimeout = 30\n'
)


async def suite_for(bus: Bus, project: str, cause: str) -> GateSuiteCompleted:
    async with asyncio.timeout(WAIT_S):
        async for record in read(bus, subjects=[f"loop.{project}.>"], follow=True):
            event: Event | None = record.event
            if isinstance(event, GateSuiteCompleted) and event.cause == cause:
                return event
    raise AssertionError("unreachable")


async def test_one_process_answers_the_suites_of_two_projects(
    bus: Bus,
    git: Callable[[str], GitRepo],
    nats_url: str,
    tmp_path: Path,
    project: str,
    system: Actor,
) -> None:
    """``--repo A=PATH --repo PATH``: the first project named, the second read from its
    loopbus.toml; each gets its suite from the one process, with one health beacon."""
    other = f"{project}-b"
    first, second = git("first"), git("second")
    first.commit({"loopbus.toml": config(project, OK_CHECK), "README": "a\n"})
    second.commit({"loopbus.toml": config(other, OK_CHECK), "README": "b\n"})
    args = [sys.executable, "-m", "workers.gate_runner", "--nats-url", nats_url]
    args += ["--repo", f"{project}={first.path}", "--repo", str(second.path)]
    args += ["--data-dir", str(tmp_path / "data"), "--jobs", "1", "--trunk-poll", "0"]
    runner = DaemonProcess(args, tmp_path / "runner.log", stop_wait_s=15)
    runner.start()
    try:
        asks = [
            GateRunRequested(project=p, actor=system, commit=r.head or "", reason="manual")
            for p, r in ((project, first), (other, second))
        ]
        for ask in asks:
            await bus.publish(ask)
        suites = [await suite_for(bus, ask.project, ask.id) for ask in asks]
        assert [s.outcome for s in suites] == ["pass", "pass"], runner.tail()
        assert [s.commit for s in suites] == [first.head, second.head]
        assert len({s.runner for s in suites}) == 1  # signed with the process's one key
        beacon = await check_health(bus, "gate-runner")
        assert beacon is not None and beacon.pid == runner.pid
        assert runner.process is not None and runner.process.poll() is None, runner.tail()
    finally:
        runner.stop()
    assert runner.process is not None and runner.process.returncode == 0, runner.tail()


def refused(module: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m <module>`` against a port nothing listens on: what it says before
    connecting is all there is."""
    env = {k: v for k, v in os.environ.items() if k != "LOOPBUS_REPO"}
    return subprocess.run(
        [sys.executable, "-m", module, "--nats-url", "nats://127.0.0.1:1", *args],
        cwd=cwd,
        env=env | {"LOOPBUS_KEY_DIR": str(cwd / "keys")},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.parametrize("module", ["workers.gate_runner", "workers.merger"])
@pytest.mark.parametrize(
    ("args", "needle"),
    [
        pytest.param(["--repo", "=repo"], "--repo =repo: nothing before '='", id="no-project"),
        pytest.param(["--repo", "a.b=repo"], "'a.b' is not a project id", id="bad-project"),
        pytest.param(["--repo", "p1="], "no repository after '='; give --repo p1=PATH", id="empty"),
        pytest.param(["--repo", "p1=gone"], "--repo p1=gone: gone does not exist", id="gone"),
        pytest.param(
            ["--repo", "p1=repo", "--repo", "p1=other"],
            "project p1 is already served by --repo p1=repo",
            id="twice",
        ),
        pytest.param(
            ["--project", "p1", "--repo", "repo", "--repo", "p2=other"],
            "--project p1: names the project of one --repo, and 2 were given",
            id="project-with-two",
        ),
        pytest.param(
            ["--project", "p1", "--repo", "p2=repo"],
            "--project p1: the --repo names project p2",
            id="project-against-named",
        ),
        pytest.param(
            ["--repo", "repo", "--repo", "./repo"],
            "--repo ./repo: repo is already served by --repo repo",
            id="same-folder-twice",
        ),
        pytest.param(["--repo", "ab\n=repo"], "is not a project id", id="newline-in-project"),
        pytest.param(  # refused before a mirror is cloned: nothing answers at that host
            ["--repo", "a.b=ssh://git@git.invalid/x.git"],
            "'a.b' is not a project id",
            id="bad-project-before-a-url",
        ),
    ],
)  # fmt: skip
def test_a_bad_repo_is_one_line_exit_2(
    tmp_path: Path, module: str, args: list[str], needle: str
) -> None:
    """A ``--repo`` that cannot be served is one line naming the value and the fix, exit 2,
    no traceback, and no key made."""
    (tmp_path / "repo").mkdir()
    (tmp_path / "other").mkdir()
    done = refused(module, tmp_path, *args)
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"python -m {module}: error: --"), done.stderr
    assert needle in done.stderr, done.stderr
    assert not (tmp_path / "keys").exists()  # the gate runner's key folder (LOOPBUS_KEY_DIR)
    assert not (tmp_path / ".loopbus").exists()  # the merger's --data-dir default


def test_a_builder_repo_naming_another_project_is_one_line(
    git: Callable[[str], GitRepo], tmp_path: Path, project: str
) -> None:
    """The builder and reviewer read the project from loopbus.toml; a ``PROJECT=`` that
    names another is refused in one line (as is any bad ``--repo``)."""
    repo = git("repo")
    repo.commit({"loopbus.toml": config(project, OK_CHECK)})
    for module in ("workers.builder", "workers.reviewer"):
        done = refused(module, tmp_path, "--repo", f"other={repo.path}")
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert f"names project {project}; give --repo {project}={repo.path}" in done.stderr
        empty = refused(module, tmp_path, "--repo", "p1=")
        assert empty.returncode == 2 and empty.stderr.count("\n") == 1, empty.stderr
