"""Units through the front door: `loopbus up` runs the units daemon and the watchdog, claims
made with `loopbus report` move units, and `loopbus status` shows where each one stands."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from bus import connect_once, free_port
from bus.creds import default_file, load_credential
from loopbus.settings import default_data_dir
from schemas import Actor, UnitPlanned
from schemas.reports import BlockedReport, StartedReport

from .conftest import loopbus

pytestmark = pytest.mark.slow


async def _plan_and_block(url: str, project: str) -> None:
    """Plan U1..U3; U1 and U3 start and block on U2 at once (well inside the lapse)."""
    system = Actor(role="system", principal="t")
    builder = Actor(role="builder", principal="b")
    # The system credential may publish the plan (a fact) and claims in any name.
    bus = await connect_once(url, creds=load_credential(default_file(default_data_dir(), "system")))
    try:
        for unit in ("U1", "U2", "U3"):
            await bus.publish(UnitPlanned(project=project, actor=system, unit=unit, slice="S1"))
        for unit in ("U1", "U3"):
            await bus.publish(StartedReport(project=project, actor=builder, unit=unit))
            await bus.publish(
                BlockedReport(
                    project=project,
                    actor=builder,
                    unit=unit,
                    reason="awaiting-dependency",
                    subject="U2",
                )
            )
    finally:
        await bus.close()


def _status_when(url: str, project: str, ready: Any, timeout: float = 30) -> dict[str, Any]:
    """`status --json` once ``ready(units state)`` holds (the projector folds behind the log)."""
    deadline = time.monotonic() + timeout
    while True:
        result = loopbus("status", "--project", project, "--json", "--nats-url", url)
        assert result.code == 0, result.err
        units = result.json_lines()[0]["state"]["units"]["units"]
        if ready(units):
            return units
        assert time.monotonic() < deadline, f"status never showed what was expected: {units}"
        time.sleep(0.2)


def test_up_runs_units_and_watchdog_and_status_shows_waits_and_losses(up_factory: Any) -> None:
    """Under `loopbus up` claims move units, silence is LOST, status shows waits and losses."""
    up = up_factory("--port", str(free_port()), "--heartbeat-lapse", "2s")
    url = ("--nats-url", up.url)
    asyncio.run(_plan_and_block(up.url, "demo"))
    started = loopbus(
        "report", "started", "--project", "demo", "--unit", "U2", "--wait", "30", *url
    )
    assert started.code == 0, started.err
    assert "unit U2: planned -> working (by started)" in started.out
    units = _status_when(up.url, "demo", lambda u: u["U2"]["state"] == "lost")
    assert units["U2"]["outcome"]["ended_by"] == "heartbeat-lapse"
    assert units["U2"]["outcome"]["lapse_s"] == 2.0

    plain = loopbus("status", "--project", "demo", *url)
    assert plain.code == 0, plain.err
    assert "blocked (2)" in plain.out and "lost (1)" in plain.out
    assert "U1  awaiting-dependency -> U2, waiting " in plain.out
    assert "U2  last heartbeat never, lapse 2s" in plain.out

    waiting = loopbus("status", "--project", "demo", "--waiting", *url)
    assert waiting.code == 0, waiting.err
    lines = waiting.out.splitlines()
    assert lines[0] == "demo: waiting on 1 subject(s):"
    assert lines[1].startswith("  awaiting-dependency U2: ")
    assert "U1 (" in lines[1] and "U3 (" in lines[1]

    as_json = loopbus("status", "--project", "demo", "--waiting", "--json", *url)
    [document] = as_json.json_lines()
    [group] = document["waiting"]
    assert (group["reason"], group["subject"]) == ("awaiting-dependency", "U2")
    assert sorted(u["unit"] for u in group["units"]) == ["U1", "U3"]
    assert up.stop() == 0
