"""Only a daemon (the system credential) takes or releases a lease: the server refuses the
agent's and the operator's lease events, raw or through the Bus, and stores the system's."""

from __future__ import annotations

import pytest
from securekit import Secured
from test_wire import refused

from bus import connect
from bus.errors import PermissionDenied
from schemas import Actor
from schemas.leases import LeaseReleased, LeaseTaken
from schemas.subjects import lease_subject

PROJECT = "wire"


@pytest.mark.parametrize("role", ["agent", "operator", "reader"])
async def test_no_credential_but_the_systems_publishes_a_lease(secured: Secured, role: str) -> None:
    assert await refused(secured, role, lease_subject(PROJECT, "gate", "ITEM1"))
    bus = await connect(secured.url, creds=secured.creds[role])
    try:
        taking = LeaseTaken(
            project=PROJECT,
            actor=Actor(role="system", principal=secured.creds[role].principal),
            work="build",
            item="ITEM1",
            holder="me",
            ttl_s=30,
        )
        with pytest.raises(PermissionDenied):
            await bus.publish_transition(taking, 0)
    finally:
        await bus.close()


async def test_the_system_takes_and_releases_a_lease(secured: Secured) -> None:
    bus = await connect(secured.url, creds=secured.creds["system"])
    try:
        system = Actor(role="system", principal="gate-runner@h")
        taking = LeaseTaken(
            project=PROJECT, actor=system, work="gate", item="ITEM2", holder="me", ttl_s=30
        )
        ack = await bus.publish_transition(taking, 0)
        release = LeaseReleased(
            project=PROJECT, actor=system, work="gate", item="ITEM2", holder="me"
        )
        assert (await bus.publish_transition(release, ack.seq)).seq > ack.seq
    finally:
        await bus.close()
