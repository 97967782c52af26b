"""The charter under `loopbus up`, as an operator runs it: the charter daemon `up` starts
answers the approval; an agent's credential cannot submit, approve or stop a charter."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bus import free_port

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "charter.md"
LOOPBUS = [sys.executable, "-m", "loopbus.cli"]


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPBUS_")}
    return subprocess.run(
        [*LOOPBUS, *args, "--nats-url", os.environ["_CHARTER_UP_URL"]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def test_up_runs_the_charter_daemon_and_only_an_operator_charters(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPBUS_")}
    up = subprocess.Popen(
        [*LOOPBUS, "up", "--port", str(free_port())],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert up.stdout is not None
    lines: list[str] = []
    try:
        for line in up.stdout:
            lines.append(line)
            if "press Ctrl-C to stop" in line:
                break
        match = re.search(r"nats://[\d.]+:\d+", "".join(lines))
        assert match, "".join(lines)
        os.environ["_CHARTER_UP_URL"] = match.group(0)
        creds = (tmp_path / ".loopbus" / "creds").resolve()
        agent = ("--creds", str(creds / "agent.json"))
        project = ("--project", "calc")

        forged = cli(tmp_path, "charter", "submit", str(EXAMPLE), *project, "--new", *agent)
        assert forged.returncode == 1 and "the agent credential may not publish" in forged.stderr
        submitted = cli(tmp_path, "charter", "submit", str(EXAMPLE), *project, "--new")
        assert submitted.returncode == 0, submitted.stderr
        why = ("--why", "scope agreed")
        forged = cli(tmp_path, "approve", "--charter", *why, *project, *agent)
        assert forged.returncode == 1 and "may not publish" in forged.stderr
        approved = cli(tmp_path, "approve", "--charter", "calc-v1", *why, "--wait", *project)
        assert approved.returncode == 0, approved.stderr + approved.stdout
        assert "approved: the run of charter calc-v1 started" in approved.stdout
        run = cli(tmp_path, "run", *project)
        assert "state: running" in run.stdout, run.stdout + run.stderr
        forged = cli(tmp_path, "run", "--stop", "--why", "mine now", *project, *agent)
        assert forged.returncode == 1 and "may not publish" in forged.stderr
        stopped = cli(tmp_path, "run", "--stop", "--why", "enough", *project)
        assert stopped.returncode == 0, stopped.stderr
        deadline = time.monotonic() + 60
        while (
            "state: ended (stopped: enough)" not in (shown := cli(tmp_path, "run", *project)).stdout
        ):
            assert time.monotonic() < deadline, shown.stdout
            time.sleep(0.2)
    finally:
        up.terminate()
        up.communicate(timeout=60)
