"""On a server run with loopbus's credentials, each role publishes only what it may.

The raw publishes go through nats-py itself, not the Bus, so what refuses them is the
server's authorization config; each test fails when that permission is widened.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import nats
import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext
from securekit import Secured

from bus import HEARTBEAT_BUCKET, LOG_STREAM, PROJECTION_BUCKET, WORKER_BUCKET, connect
from bus.errors import BusError, PermissionDenied
from bus.provision import log_config
from schemas import Actor, FindingRaised, UnitTransitioned, parse_target
from schemas.merges import ApproveReport
from schemas.reports import StartedReport
from schemas.units import Outcome

PROJECT = "wire"


@asynccontextmanager
async def raw(secured: Secured, role: str) -> AsyncIterator[tuple[Client, list[str]]]:
    """A plain nats-py connection with ``role``'s credential, and the errors it was sent."""
    errors: list[str] = []

    async def on_error(exc: Exception) -> None:
        errors.append(str(exc).lower())

    nc = await nats.connect(secured.url, nkeys_seed_str=secured.creds[role].seed, error_cb=on_error)
    try:
        yield nc, errors
    finally:
        await nc.close()


async def refused(secured: Secured, role: str, subject: str) -> bool:
    """True when the server refuses ``role`` a JetStream publish on ``subject``."""
    async with raw(secured, role) as (nc, errors):
        try:
            await nc.jetstream(timeout=1.5).publish(subject, b"{}")
        except TimeoutError:
            await nc.flush()
            return any("permissions violation" in e and subject.lower() in e for e in errors)
        return False


async def last_seq(secured: Secured) -> int:
    async with raw(secured, "reader") as (nc, _):
        info = await nc.jetstream().stream_info(LOG_STREAM)
        return int(info.state.last_seq)


async def test_agent_cannot_publish_a_fact_subject(secured: Secured) -> None:
    """An agent's publish on a fact subject (a unit's transition) is refused and not stored."""
    before = await last_seq(secured)
    assert await refused(secured, "agent", f"loop.{PROJECT}.unit.U1")
    assert await refused(secured, "agent", f"loop.{PROJECT}.finding.gate_runner")
    assert await last_seq(secured) == before


async def test_agent_may_publish_only_its_own_claims(secured: Secured) -> None:
    """An agent publishes claims under its own principal, never under another's."""
    own = f"loop.{PROJECT}.claim.builder.agent.report.builder.U1"
    other = f"loop.{PROJECT}.claim.builder.someone-else.report.builder.U1"
    assert not await refused(secured, "agent", own)
    assert await refused(secured, "agent", other)
    assert await refused(secured, "agent", f"loop.{PROJECT}.claim.operator.agent.report.x")


async def test_reader_cannot_publish(secured: Secured) -> None:
    """A reader's credential publishes nothing on the log, not even a claim of its own."""
    assert await refused(secured, "reader", f"loop.{PROJECT}.claim.builder.reader.report.x")
    assert await refused(secured, "reader", f"loop.{PROJECT}.unit.U1")


@pytest.mark.parametrize("role", ["operator", "agent", "reader"])
async def test_no_credential_but_the_system_can_forge_an_answer_on_a_reply_subject(
    secured: Secured, role: str
) -> None:
    """Every role may subscribe to ``_INBOX.>``, so it sees the acknowledgements the log
    sends a daemon. Were it allowed to publish there, it could answer a daemon's publish
    before the server does: a refused transition acked as stored, an event given another
    event's sequence. The server refuses it, and the daemon never sees the forgery."""
    inbox = "_INBOX.daemon.pub.7"
    async with raw(secured, "system") as (daemon, _), raw(secured, role) as (nc, errors):
        heard: list[bytes] = []

        async def on_answer(msg: nats.aio.msg.Msg) -> None:
            heard.append(msg.data)

        await daemon.subscribe(inbox, cb=on_answer)
        await daemon.flush()
        await nc.publish(inbox, b'{"stream":"LOOP","seq":1}')
        await nc.flush()
        await daemon.publish(inbox, b"the system may")  # the subscription works
        async with asyncio.timeout(5):
            while b"the system may" not in heard:
                await asyncio.sleep(0.01)
        await nc.flush()
        assert any("permissions violation" in e and inbox.lower() in e for e in errors)
        assert heard == [b"the system may"]


@pytest.mark.parametrize("role", ["system", "operator", "agent", "reader"])
async def test_only_admin_changes_or_removes_the_stream(secured: Secured, role: str) -> None:
    """No role but admin can shrink the log (update max_msgs), purge it or delete it."""
    async with raw(secured, role) as (nc, errors):
        js: JetStreamContext = nc.jetstream(timeout=1.5)
        shrunk = log_config()
        shrunk.max_msgs = 1
        for attempt in (js.update_stream(shrunk), js.purge_stream(LOG_STREAM)):
            with pytest.raises(TimeoutError):
                await attempt
        with pytest.raises(TimeoutError):
            await js.delete_stream(LOG_STREAM)
        with pytest.raises(TimeoutError):
            await js.delete_stream(f"KV_{PROJECTION_BUCKET}")
        await nc.flush()
    assert sum("permissions violation" in e for e in errors) == 4
    async with raw(secured, "admin") as (nc, _):
        info = await nc.jetstream().stream_info(LOG_STREAM)
        assert info.config.max_msgs == -1


async def test_admin_may_change_the_stream(secured: Secured) -> None:
    """The admin credential is the one that may update the log's configuration."""
    async with raw(secured, "admin") as (nc, _):
        info = await nc.jetstream().update_stream(log_config())
        assert info.config.name == LOG_STREAM


@pytest.mark.parametrize("role", ["operator", "agent", "reader"])
async def test_only_system_writes_views_and_checkpoints(secured: Secured, role: str) -> None:
    """Overwriting a materialised view or a daemon's checkpoint is refused to every role
    but system, which may."""
    async with raw(secured, role) as (nc, errors):
        for bucket in (PROJECTION_BUCKET, WORKER_BUCKET):
            kv = await nc.jetstream(timeout=1.5).key_value(bucket)
            with pytest.raises(TimeoutError):
                await kv.put("checkpoint.projector", b"999999")
        await nc.flush()
    assert sum("permissions violation" in e for e in errors) == 2
    async with raw(secured, "system") as (nc, _):
        kv = await nc.jetstream().key_value(PROJECTION_BUCKET)
        assert await kv.put("checkpoint.tests", b"1") > 0


@pytest.mark.parametrize("role", ["operator", "agent", "reader"])
async def test_only_system_writes_heartbeats(secured: Secured, role: str) -> None:
    """No role but system may put a heartbeat: the server does not check which key a writer
    puts or whom the value names, so a credential that may beat could keep any unit alive.
    The builder daemon beats (as system) for the agent it runs, which holds no credential."""
    async with raw(secured, role) as (nc, errors):
        kv = await nc.jetstream(timeout=1.5).key_value(HEARTBEAT_BUCKET)
        with pytest.raises(TimeoutError):
            await kv.put(f"{PROJECT}.U1", b"{}")
        await nc.flush()
    assert any("permissions violation" in e and HEARTBEAT_BUCKET in e for e in errors)
    async with raw(secured, "system") as (nc, _):
        kv = await nc.jetstream().key_value(HEARTBEAT_BUCKET)
        assert await kv.put(f"{PROJECT}.U1", b"{}") > 0


async def test_agent_cannot_publish_an_approval(secured: Secured) -> None:
    """An approve report is an operator's: the agent credential cannot put one on the log,
    under its own principal or the operator's."""
    assert await refused(
        secured, "agent", f"loop.{PROJECT}.claim.operator.agent.report.operator.U1"
    )
    assert await refused(
        secured, "agent", f"loop.{PROJECT}.claim.operator.operator.report.operator.U1"
    )
    operator = await connect(secured.url, creds=secured.creds["operator"])
    try:
        approval = ApproveReport(
            project=PROJECT, actor=Actor(role="operator", principal="operator"), unit="U1"
        )
        assert (await operator.publish(approval)).seq > 0
    finally:
        await operator.close()


async def test_bus_refuses_before_sending_in_one_line(secured: Secured) -> None:
    """The Bus names the credential, the subject and what it may do, without waiting."""
    bus = await connect(secured.url, creds=secured.creds["agent"])
    try:
        done = UnitTransitioned(
            project=PROJECT,
            actor=Actor(role="system", principal="agent"),
            unit="U1",
            state="done",
            by="merged",
            outcome=Outcome(summary="trust me", ended_by="merge"),
        )
        with pytest.raises(PermissionDenied) as refusal:
            await bus.publish(done)
        message = str(refusal.value)
        assert message.startswith(f"the agent credential may not publish on loop.{PROJECT}.unit.U1")
        assert "\n" not in message
        beats = await bus.bucket(PROJECTION_BUCKET)
        with pytest.raises(PermissionDenied):
            await beats.put("checkpoint.projector", b"1")
    finally:
        await bus.close()


async def test_a_server_refusal_ends_the_publish_with_one_line(secured: Secured) -> None:
    """When the client-side check is bypassed (a credential claiming a wider role), the
    server's refusal still ends the publish as PermissionDenied, not a long retry."""
    agent = secured.creds["agent"]
    lying = type(agent)("system", agent.principal, agent.seed, agent.public_key)
    bus = await connect(secured.url, creds=lying)
    try:
        finding = FindingRaised(
            project=PROJECT,
            actor=Actor(role="system", principal="agent"),
            producer="gate_runner",
            target=parse_target("check:tests"),
            severity="high",
            cls="defect",
            message="forged",
        )
        with pytest.raises(PermissionDenied, match="the server refused it"):
            await bus.publish(finding)
    finally:
        await bus.close()


async def test_unknown_credentials_are_refused(secured: Secured, tmp_path) -> None:
    """A connection without credentials, or with a key the server does not know, is
    refused with one line that says to pass --creds."""
    from bus.creds import new_credential

    with pytest.raises(BusError, match=r"without credentials.*--creds"):
        await connect(secured.url, timeout=3)
    stranger = new_credential("system", "stranger")
    with pytest.raises(BusError, match="refused the system credential"):
        await connect(secured.url, creds=stranger, timeout=3)


async def test_claims_from_the_agent_still_work_through_the_bus(secured: Secured) -> None:
    """The agent's ordinary claim (started) is published through the Bus and stored."""
    bus = await connect(secured.url, creds=secured.creds["agent"])
    try:
        claim = StartedReport(
            project=PROJECT, actor=Actor(role="builder", principal="agent"), unit="U1"
        )
        assert (await bus.publish(claim)).seq > 0
    finally:
        await bus.close()
