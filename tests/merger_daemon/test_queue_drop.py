"""A candidate dropped from the merge queue stops being tested even when the cancel that
drops it is lost.

On Python 3.11 ``asyncio.wait_for`` returns the awaited result instead of raising when a
cancel lands just as that result arrives (gh-86296), and nats-py waits for every publish
acknowledgement that way. A dropped candidate's test that lost its cancel there ran on to
its end for nothing, holding gate slots the live candidates needed. The test below stands
in for a candidate's test with a task that loses its first cancel exactly as that race
does; nothing else of the queue runs, so no server or repository is needed.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from projections.merges import QueueEntry
from workers.merger.gitops import MergeAttempt
from workers.merger.queue import Candidate, Pipeline


async def loses_its_first_cancel(lost: list[str]) -> Any:
    try:
        await asyncio.sleep(60)  # a candidate's checks, running
    except asyncio.CancelledError:
        lost.append("cancel")  # swallowed, as wait_for does: the task runs on
    await asyncio.sleep(60)


def candidate(key: tuple[str, str, str], task: asyncio.Task[Any]) -> Candidate:
    entry = QueueEntry(
        queued="q1",
        unit=key[1],
        head=key[2],
        approval="a1",
        approver="r1",
        via="review",
        at=datetime.now(UTC),
    )
    attempt = MergeAttempt(ours=key[0], theirs=key[2], base=key[0], commit="c" * 40)
    return Candidate(key=key, entry=entry, attempt=attempt, ahead=[], task=task)


async def dropped() -> tuple[Pipeline, asyncio.Task[Any], list[str]]:
    """A pipeline whose one candidate's test, running, has just been dropped."""
    pipeline = Pipeline(repo=Path("."), trunk="main", gates=None)  # type: ignore[arg-type]
    lost: list[str] = []
    testing = asyncio.create_task(loses_its_first_cancel(lost))
    key = ("t" * 40, "U1", "h" * 40)
    pipeline.candidates[key] = candidate(key, testing)
    await asyncio.sleep(0)  # the test is running
    pipeline.keep(set())  # a new stack without it: dropped
    return pipeline, testing, lost


async def test_a_dropped_candidate_whose_cancel_is_lost_is_cancelled_again() -> None:
    pipeline, testing, lost = await dropped()

    # Before the fix the one cancel was all it got: the test ran its full 60 s.
    done, _ = await asyncio.wait([testing], timeout=10)
    assert done, "the dropped candidate's test ran on after its cancel was lost"
    assert lost == ["cancel"], "the first cancel was not lost: the race was not staged"
    assert testing.cancelled()
    async with asyncio.timeout(5):  # the stop ends with the test, and forgets itself
        while pipeline.stopping:
            await asyncio.sleep(0.01)


async def test_close_waits_for_dropped_candidates_to_end() -> None:
    pipeline, testing, _lost = await dropped()

    async with asyncio.timeout(10):
        await pipeline.close()
    assert testing.done(), "close returned while a dropped candidate's test still ran"
