"""``loopbus gate move`` end to end: the CLI claims, the ratchet daemon settles or refuses."""

from __future__ import annotations

import asyncio

from kernelkit import running

from bus import Bus, read
from projections import ratchet
from schemas import project_subjects
from schemas.ratchet import GateMoved
from workers.ratchet.daemon import Ratchet
from workers.ratchet.policy import Policy

from .conftest import loopbus


async def test_a_gate_is_drafted_refused_to_a_builder_and_approved_by_the_operator(
    bus: Bus, nats_url: str, project: str
) -> None:
    """A builder drafts a gate from the command line; its own approval is refused with the
    authority it needs (exit 1); the operator's is settled (exit 0) and the gate is Local
    on the log, and replay renders the gate as it was at any point (Drafted, awaiting the
    operator, after the draft). A cadence move without --every, or a gate id that is no
    token, is a usage error naming the option (exit 2) and publishes nothing."""
    common = ["--nats-url", nats_url, "--project", project, "--gate", "no-print", "--wait", "30"]
    draft = ["--move", "draft", "--role", "builder", "--principal", "b1", "--check", "no-print",
             "--defect", "secrets printed to logs",
             "--why", "a token leaked through a print"]  # fmt: skip
    unknown = loopbus("gate", "move", *common, *draft)
    assert unknown.code == 2 and "has no event on the log" in unknown.err, unknown.err
    async with running(bus, Ratchet(Policy(), projects=[project])):
        drafted = await asyncio.to_thread(loopbus, "gate", "move", *common, *draft, "--new")
        refused = await asyncio.to_thread(
            loopbus, "gate", "move", *common, "--move", "approve", "--role", "builder",
            "--principal", "b1", "--why", "mine",
        )  # fmt: skip
        approved = await asyncio.to_thread(
            loopbus, "gate", "move", *common, "--move", "approve", "--principal", "alice",
            "--why", "it would have caught the leak",
        )  # fmt: skip
    assert drafted.code == 0, drafted.err
    assert "moved: local gate no-print nothing -> Drafted by builder:b1" in drafted.out
    assert refused.code == 1 and "settled by the project operator" in refused.out
    assert approved.code == 0 and "Drafted -> Local by operator:alice" in approved.out
    events = [r.event async for r in read(bus, subjects=[project_subjects(project)]) if r.event]
    view = ratchet.FOLD.fold(events).gates["local:no-print"]
    assert (view.state, view.defect) == ("Local", "secrets printed to logs")
    replayed = loopbus("replay", "--nats-url", nats_url, "--project", project)
    assert "  local:no-print: Local (catches: secrets printed to logs)" in replayed.out
    records = [r async for r in read(bus, subjects=[project_subjects(project)])]
    drafted_at = next(r.seq for r in records if isinstance(r.event, GateMoved))
    upto = loopbus("replay", "--nats-url", nats_url, "--project", project,
                   "--until", str(drafted_at))  # fmt: skip
    assert "  local:no-print: Drafted (awaits the operator; catches: secrets" in upto.out
    before = len(events)
    no_n = loopbus("gate", "move", *common[:4], "--scope", "profile", "--gate", "cli",
                   "--move", "lower-cadence", "--role", "standards", "--why", "sooner")  # fmt: skip
    assert no_n.code == 2 and "--every is missing: lower-cadence names the new N" in no_n.err
    dotted = loopbus("gate", "move", *common[:4], "--gate", "a.b", "--move", "draft", "--why", "x")
    assert dotted.code == 2 and "--gate 'a.b' is not a gate id" in dotted.err
    after = [r.event async for r in read(bus, subjects=[project_subjects(project)]) if r.event]
    assert len(after) == before
