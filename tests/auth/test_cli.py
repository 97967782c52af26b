"""The README's flow under credentials: ``loopbus up``, then commands with no extra flags."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bus import connect, free_port
from bus.creds import load_credential
from schemas import Actor, Outcome, UnitPlanned, UnitTransitioned

LOOPBUS = [sys.executable, "-m", "loopbus.cli"]

pytestmark = pytest.mark.slow


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPBUS_")}
    env["LOOPBUS_NATS_URL"] = os.environ["_UP_URL"]
    return subprocess.run(
        [*LOOPBUS, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


async def plan_as_system(url: str, system_creds: Path, unit: str, *, ended: bool = False) -> None:
    """``unit`` planned as the system would plan it; ``ended``: and then failed."""
    system = Actor(role="system", principal="tests")
    bus = await connect(url, creds=load_credential(system_creds))
    try:
        await bus.publish(
            UnitPlanned(project="demo", actor=system, unit=unit, slice="S1", files=["a.py"])
        )
        if ended:
            await bus.publish(
                UnitTransitioned(project="demo", actor=system, unit=unit, state="failed",
                                 prior=None, by="halted",
                                 outcome=Outcome(summary="halted", ended_by="operator"))
            )  # fmt: skip
    finally:
        await bus.close()


def test_up_hands_out_credentials_and_commands_find_them(tmp_path: Path) -> None:
    """up makes the credentials in .loopbus/creds (0600) and names the agent's and the
    operator's file; status, report and approve then work with no --creds; an agent
    credential cannot approve; another principal is refused before publishing; a
    credential added while up runs is admitted at once."""
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
        text = "".join(lines)
        match = re.search(r"nats://[\d.]+:\d+", text)
        assert match, text
        os.environ["_UP_URL"] = match.group(0)
        creds = (tmp_path / ".loopbus" / "creds").resolve()
        assert f"agents (builders, reviewers, planners): {creds / 'agent.json'}" in text
        assert f"an operator (approve, decide):          {creds / 'operator.json'}" in text
        for role in ("admin", "system", "operator", "reader", "agent"):
            assert (creds / f"{role}.json").stat().st_mode & 0o777 == 0o600

        opened = cli(
            tmp_path, "report", "finding", "--project", "demo", "--new", "--producer", "reviewer",
            "--target", "code:a.py:1", "--severity", "low", "--message", "a new project",
        )  # fmt: skip
        assert opened.returncode == 0, opened.stderr  # commands refuse a project with no event
        status = cli(tmp_path, "status", "--project", "demo")
        assert status.returncode == 0, status.stderr
        inside = tmp_path / "calc" / "src"  # `up --repo calc` ran beside it; people cd in
        inside.mkdir(parents=True)
        nested = cli(inside, "status", "--project", "demo")
        assert nested.returncode == 0, nested.stderr
        unplanned = cli(tmp_path, "report", "started", "--project", "demo", "--unit", "U1")
        assert unplanned.returncode == 2 and "no accepted plan" in unplanned.stderr
        # Without --repo no plan is accepted; the scene's U1 is planned as the system would.
        asyncio.run(plan_as_system(os.environ["_UP_URL"], creds / "system.json", "U1"))
        started = cli(tmp_path, "report", "started", "--project", "demo", "--unit", "U1")
        assert started.returncode == 0, started.stderr
        why = ("--why", "looked at it")
        nosuch = cli(tmp_path, "approve", "--project", "demo", "--unit", "U9", *why)
        assert nosuch.returncode == 2 and "no accepted plan" in nosuch.stderr, nosuch.stderr
        approve = cli(tmp_path, "approve", "--project", "demo", "--unit", "U1", *why)
        assert approve.returncode == 0, approve.stderr
        asyncio.run(plan_as_system(os.environ["_UP_URL"], creds / "system.json", "U2", ended=True))
        ended = cli(tmp_path, "approve", "--project", "demo", "--unit", "U2", *why)
        assert ended.returncode == 2 and "'U2' is failed already" in ended.stderr, ended.stderr
        # Every operator command finds the operator credential by itself (they once took
        # the reader's, which may publish nothing).
        for operator_command in (
            ("finding", "dismiss", "--id", "01M8QMVW4EW8GJYH1ANT4QVEF4", "--as", "duplicate", *why),
            ("decision", "record", "--question", "which store?", "--chosen", "sqlite"),
            ("trunk", "recheck", *why),
            ("config", "adopt", "--commit", "a" * 40, *why),
        ):
            done = cli(tmp_path, *operator_command, "--project", "demo")
            assert done.returncode == 0, (operator_command, done.stderr)

        agent = ("--creds", str(creds / "agent.json"))
        forged = cli(tmp_path, "approve", "--project", "demo", "--unit", "U1", *why, *agent)
        assert forged.returncode == 1
        assert forged.stderr.startswith(
            "loopbus: error: the agent credential may not publish on "
            "loop.demo.claim.operator.agent.report.operator.U1"
        )
        adopt = ("config", "adopt", "--project", "demo", "--commit", "a" * 40, *why, *agent)
        forged = cli(tmp_path, *adopt)
        assert forged.returncode == 1
        assert forged.stderr.startswith(
            "loopbus: error: the agent credential may not publish on "
            "loop.demo.claim.operator.agent.config.adopt"
        )
        other = cli(
            tmp_path, "report", "started", "--project", "demo", "--unit", "U1", "--principal", "bob"
        )
        assert other.returncode == 2
        assert "is for principal 'agent'" in other.stderr
        assert len(other.stderr.strip().splitlines()) == 1

        added = cli(tmp_path, "creds", "add", "--role", "agent", "--principal", "b2")
        assert added.returncode == 0, added.stderr
        assert "reloaded its users" in added.stdout
        new = ("--creds", str(creds / "agent-b2.json"))
        asyncio.run(plan_as_system(os.environ["_UP_URL"], creds / "system.json", "U3"))
        for _ in range(30):  # the server applies a reload a moment after the signal
            claimed = cli(tmp_path, "report", "started", "--project", "demo", "--unit", "U3", *new)
            if claimed.returncode == 0:
                break
            time.sleep(0.1)
        assert claimed.returncode == 0, claimed.stderr
        tail = cli(tmp_path, "tail", "--project", "demo", "--no-follow", "--json")
        assert tail.returncode == 0, tail.stderr
        subjects = [json.loads(line)["subject"] for line in tail.stdout.splitlines()]
        assert "loop.demo.claim.builder.b2.report.builder.U3" in subjects
        assert "loop.demo.claim.operator.operator.report.operator.U1" in subjects
    finally:
        os.environ.pop("_UP_URL", None)
        up.send_signal(signal.SIGTERM)
        up.communicate(timeout=60)


def start_up(data_dir: Path) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPBUS_")}
    up = subprocess.Popen(
        [*LOOPBUS, "up", "--port", str(free_port()), "--data-dir", str(data_dir)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert up.stdout is not None
    text = ""
    for line in up.stdout:
        text += line
        if "press Ctrl-C to stop" in line or "error" in line:
            break
    match = re.search(r"nats://[\d.]+:\d+", text)
    assert match, text
    return up, match.group(0)


def test_up_refuses_to_start_on_a_log_that_vanished(tmp_path: Path) -> None:
    """When the log up recorded in its data directory is gone, the next up exits 1 with one
    line naming the record, instead of provisioning an empty log."""
    import asyncio

    import nats

    from bus import LOG_STREAM
    from bus.creds import default_file, load_credential

    data_dir = tmp_path / "data"
    up, url = start_up(data_dir)
    try:
        admin = load_credential(default_file(data_dir, "admin"))

        async def delete() -> None:
            nc = await nats.connect(url, nkeys_seed_str=admin.seed)
            await nc.jetstream().delete_stream(LOG_STREAM)
            await nc.close()

        asyncio.run(delete())
    finally:
        up.send_signal(signal.SIGTERM)
        up.communicate(timeout=60)
    assert (data_dir / "log.json").exists()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPBUS_")}
    again = subprocess.run(
        [*LOOPBUS, "up", "--port", str(free_port()), "--data-dir", str(data_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert again.returncode == 1, again.stdout + again.stderr
    [error] = [line for line in again.stderr.splitlines() if line.startswith("loopbus: error:")]
    assert "is gone, but history existed" in error and "log.json" in error
