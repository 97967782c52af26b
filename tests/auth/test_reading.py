"""Another credential cannot make a daemon's reader skip or misorder the log.

Every role may subscribe to everything, create consumers and pull from them: reading
needs it, and the server checks neither where a consumer delivers nor who pulls from it.
An agent watching ``$JS.API.CONSUMER.MSG.NEXT.LOOP.*`` learns a reader's consumer and
inbox; these tests do what it could do next, with the agent credential, against a real
server run with loopbus's credentials, and show the system reader still yields every
event once, in order.
"""

from __future__ import annotations

import asyncio
import json

import nats
from logkit import findings
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from securekit import Secured

from bus import LOG_STREAM, Bus, connect, read
from schemas import project_subjects


async def system_bus(secured: Secured) -> Bus:
    return await connect(secured.url, creds=secured.creds["system"], name="system-reader")


async def watch_pulls(agent: nats.NATS, project: str) -> asyncio.Queue[Msg]:
    """The agent's view of every reader's pull requests (its consumer and inbox)."""
    seen: asyncio.Queue[Msg] = asyncio.Queue()

    async def on_pull(msg: Msg) -> None:
        seen.put_nowait(msg)

    await agent.subscribe(f"$JS.API.CONSUMER.MSG.NEXT.{LOG_STREAM}.*", cb=on_pull)
    return seen


async def test_a_message_delivered_onto_a_readers_inbox_by_another_consumer_is_dropped(
    secured: Secured,
) -> None:
    """The agent creates a consumer that delivers the log's last event straight onto the
    reader's inbox while a replay is under way. Taken, it would jump the replay to the
    end (everything after it looks already read) and say nothing is pending."""
    project = "inject"
    bus = await system_bus(secured)
    agent = await nats.connect(secured.url, nkeys_seed_str=secured.creds["agent"].seed)
    try:
        events = findings(project, 6000)
        await bus.publish_many(events)
        pulls = await watch_pulls(agent, project)
        stored: list[str] = []
        async for record in read(bus, subjects=[project_subjects(project)]):
            assert record.event is not None
            stored.append(record.event.id)
            if len(stored) == 1:
                inbox = (await asyncio.wait_for(pulls.get(), 5)).reply
                await agent.jetstream().add_consumer(
                    LOG_STREAM,
                    ConsumerConfig(
                        deliver_subject=inbox,
                        deliver_policy=DeliverPolicy.LAST,
                        filter_subject=project_subjects(project),
                        ack_policy=AckPolicy.NONE,
                    ),
                )
        assert stored == [e.id for e in events]
    finally:
        await agent.close()
        await bus.close()


async def test_messages_pulled_from_a_readers_consumer_by_another_client_are_read_again(
    secured: Secured,
) -> None:
    """The agent pulls batches from a following reader's own consumer (acks are off, so
    what it takes is gone from that consumer). The reader sees the gap in the consumer's
    sequence, re-creates its consumer after the last event it handed out, and still yields
    every event once, in order."""
    project = "siphon"
    bus = await system_bus(secured)
    agent = await nats.connect(secured.url, nkeys_seed_str=secured.creds["agent"].seed)
    try:
        pulls = await watch_pulls(agent, project)
        stolen: list[Msg] = []

        async def on_stolen(msg: Msg) -> None:
            if not (msg.headers or {}).get("Status"):
                stolen.append(msg)

        await agent.subscribe("_INBOX.agent.>", cb=on_stolen)
        events = findings(project, 300)
        stored: list[str] = []

        async def follow() -> None:
            async for record in read(bus, subjects=[project_subjects(project)], follow=True):
                assert record.event is not None
                stored.append(record.event.id)
                if len(stored) == len(events):
                    return

        reading = asyncio.create_task(follow())
        pull = await asyncio.wait_for(pulls.get(), 5)  # the reader's first request
        for start in range(0, len(events), 50):
            # Ask the reader's consumer for more, under the agent's own inbox, then publish.
            for _ in range(3):
                await agent.publish(
                    pull.subject, json.dumps({"batch": 5}).encode(), reply="_INBOX.agent.x"
                )
            await agent.flush()
            await bus.publish_many(events[start : start + 50])
        async with asyncio.timeout(30):
            await reading
        assert stolen, "the agent took nothing: the test did not test anything"
        assert stored == [e.id for e in events]
    finally:
        await agent.close()
        await bus.close()
