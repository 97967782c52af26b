"""Smoke: the session server accepts, stores and returns one event."""

from bus import Bus, read
from schemas import Actor, FindingRaised, parse_target, project_subjects


async def test_publish_then_read_back(bus: Bus, project: str) -> None:
    """An event published to the log reads back equal, at the sequence its ack named."""
    finding = FindingRaised(
        project=project,
        actor=Actor(role="reviewer", principal="r1"),
        producer="reviewer",
        target=parse_target("code:a.py:1-2"),
        severity="low",
        message="m",
    )
    ack = await bus.publish(finding)
    records = [r async for r in read(bus, subjects=[project_subjects(project)])]
    assert [(r.seq, r.event) for r in records] == [(ack.seq, finding)]
