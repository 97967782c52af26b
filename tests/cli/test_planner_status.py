"""`loopbus status` shows where planning stands for a running charter: the slice being
planned, the proposal awaiting approval, the refused try with its first reason, and
reconnaissance — read from the projector's views of a real server's log."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

from plannerview import CYCLE, fold_with_projector, planner_events

from bus import Bus


def loopbus(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopbus.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ,
        stdin=subprocess.DEVNULL,
    )


async def test_status_shows_the_planner_of_a_running_charter(
    bus: Bus, nats_url: str, project: str
) -> None:
    events = planner_events(project)
    await bus.publish_many(events)
    await fold_with_projector(bus, nats_url)
    status = await asyncio.to_thread(
        loopbus, "status", "--project", project, "--nats-url", nats_url
    )
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    start = lines.index("  planner:")
    block = lines[start : start + 6]
    recon_at = events[2].at.isoformat()
    assert block == [
        "  planner:",
        "    planning: S1",
        "    proposal: S1 try 2, 2 units — awaiting approval (loopbus approve --plan S1 --why …)",
        f"    refused: S1 try 1: {CYCLE} (+1 more reasons)",
        f"    reconnaissance: ran {recon_at}, 2 facts",
        "    this run: 2 planner answers, 1 reconnaissance runs",
    ]
    as_json = await asyncio.to_thread(
        loopbus, "status", "--project", project, "--nats-url", nats_url, "--json"
    )
    planner = json.loads(as_json.stdout)["state"]["planner"]
    assert planner["recon"]["facts"][0]["id"] == "F1"
    assert [a["attempt"] for a in planner["attempts"]] == [1]


async def test_status_shows_no_planner_for_a_project_planned_by_hand(
    bus: Bus, nats_url: str, project: str
) -> None:
    await bus.publish_many(planner_events(project)[1:2])  # criteria checked, no charter
    await fold_with_projector(bus, nats_url)
    status = await asyncio.to_thread(
        loopbus, "status", "--project", project, "--nats-url", nats_url
    )
    assert status.returncode == 0, status.stderr
    assert "  planner: idle (no charter has run)" in status.stdout.splitlines()
