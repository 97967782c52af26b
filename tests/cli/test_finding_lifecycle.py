"""``loopbus finding dismiss|reopen`` end to end: the CLI claims, the ratchet daemon answers."""

from __future__ import annotations

import asyncio

from kernelkit import running

from bus import Bus
from schemas import Actor, FindingRaised, parse_target
from workers.ratchet.daemon import Ratchet
from workers.ratchet.policy import Policy

from .conftest import loopbus

SYSTEM = Actor(role="system", principal="tests")


async def test_an_operator_dismisses_and_reopens_a_finding_from_the_command_line(
    bus: Bus, nats_url: str, project: str
) -> None:
    """The dismissal is answered by the daemon and printed; dismissing it twice is refused
    with one line and exit 1; a bad --as is a usage error naming the choices."""
    finding = FindingRaised(
        project=project, actor=SYSTEM, producer="gate_runner", severity="low",
        target=parse_target("code:a.py:3"), criterion="lint", message="E501",
        evidence={"check": "lint"},
    )  # fmt: skip
    await bus.publish(finding)
    common = ["--nats-url", nats_url, "--project", project, "--id", finding.id]
    async with running(bus, Ratchet(Policy(), projects=[project])):
        dismissed = await asyncio.to_thread(
            loopbus, "finding", "dismiss", *common, "--as", "false-positive",
            "--why", "generated", "--principal", "alice", "--wait", "30",
        )  # fmt: skip
        again = await asyncio.to_thread(
            loopbus, "finding", "dismiss", *common, "--as", "duplicate", "--why", "again",
            "--principal", "alice", "--wait", "30",
        )  # fmt: skip
        reopened = await asyncio.to_thread(
            loopbus, "finding", "reopen", *common, "--why", "real", "--principal", "alice",
            "--wait", "30",
        )  # fmt: skip
    assert dismissed.code == 0, dismissed.err
    assert "dismissed (false-positive) by operator:alice" in dismissed.out
    assert again.code == 1 and "already dismissed; reopen it first" in again.out
    assert reopened.code == 0 and "reopened by operator:alice" in reopened.out
    bad = loopbus("finding", "dismiss", *common, "--as", "boring", "--why", "x")
    assert bad.code == 2 and "--as 'boring' is not one of" in bad.err
