"""Reading the log back: nothing lost however slow the reader, bounds honoured."""

from __future__ import annotations

import asyncio

import pytest

from bus import Bus, read
from schemas import Actor, FindingRaised, parse_target, project_subjects

REVIEWER = Actor(role="reviewer", principal="r1")


def findings(project: str, count: int) -> list[FindingRaised]:
    return [
        FindingRaised(
            project=project,
            actor=REVIEWER,
            producer="reviewer",
            target=parse_target(f"code:a.py:{i % 900 + 1}-{i % 900 + 1}"),
            severity="low",
            message="x" * 400,
        )
        for i in range(count)
    ]


@pytest.mark.slow
async def test_a_stalled_reader_loses_nothing(bus: Bus, project: str) -> None:
    """A reader that stalls while the server pushes more than nats-py's default queue holds
    still receives every event, in order (a dropped message would be silent data loss)."""
    count = 80_000
    await bus.publish_many(findings(project, count))
    seqs: list[int] = []
    async for record in read(bus, subjects=[project_subjects(project)]):
        if not seqs:
            await asyncio.sleep(3)  # let the server push as much as it will
        seqs.append(record.seq)
    assert len(seqs) == count
    assert seqs == sorted(seqs) and len(set(seqs)) == count


async def test_until_seq_stops_there(bus: Bus, project: str) -> None:
    """read(until_seq=N) yields nothing past N."""
    acks = await bus.publish_many(findings(project, 10))
    got = [
        r.seq async for r in read(bus, subjects=[project_subjects(project)], until_seq=acks[4].seq)
    ]
    assert got == [a.seq for a in acks[:5]]


async def test_start_seq_skips_earlier_events(bus: Bus, project: str) -> None:
    """read(start_seq=N) begins at N."""
    acks = await bus.publish_many(findings(project, 6))
    got = [
        r.seq async for r in read(bus, subjects=[project_subjects(project)], start_seq=acks[3].seq)
    ]
    assert got == [a.seq for a in acks[3:]]


async def test_empty_filter_returns_at_once(bus: Bus, project: str) -> None:
    """Reading a project with no events ends immediately instead of waiting for one."""
    async with asyncio.timeout(10):
        assert [r async for r in read(bus, subjects=[project_subjects(project)])] == []
