"""The kernel's crash policy for folds: a fold that raises on one event skips that event for
that fold alone, records it once on the log, and the daemon carries on."""

from __future__ import annotations

import msgspec
from kernelkit import running

from bus import Bus, read
from projections import FoldFailure, apply_all, initial_states
from projections import findings as findings_fold
from projections.base import Fold
from schemas import (
    Actor,
    Event,
    FindingRaised,
    FoldQuarantined,
    parse_target,
    project_subjects,
)
from workers.kernel import Daemon

REVIEWER = Actor(role="reviewer", principal="r1")


class Seen(msgspec.Struct):
    messages: list[str] = []


def fragile_apply(state: Seen, event: Event) -> Seen:
    if isinstance(event, FindingRaised):
        state.messages.append(event.message)  # changed before raising: kept, as in replay
        if event.message == "boom":
            raise RecursionError("maximum recursion depth exceeded")
    return state


def sturdy_apply(state: Seen, event: Event) -> Seen:
    if isinstance(event, FindingRaised):
        state.messages.append(event.message)
    return state


FRAGILE = Fold(name="fragile", state_type=Seen, initial=Seen, apply=fragile_apply)
STURDY = Fold(name="sturdy", state_type=Seen, initial=Seen, apply=sturdy_apply)


class Watcher(Daemon):
    name = "watcher"
    folds = (FRAGILE, STURDY)


def finding(project: str, message: str, line: int) -> FindingRaised:
    return FindingRaised(
        project=project,
        actor=REVIEWER,
        producer="reviewer",
        target=parse_target(f"code:a.py:{line}-{line}"),
        severity="high",
        message=message,
    )


async def records(bus: Bus, project: str) -> list[FoldQuarantined]:
    return [
        r.event
        async for r in read(bus, subjects=[project_subjects(project)])
        if isinstance(r.event, FoldQuarantined)
    ]


async def test_a_fold_that_raises_skips_that_event_and_records_it_once(
    bus: Bus, project: str
) -> None:
    """Two daemons whose fold raises on the same event both carry on (every other event and
    every other fold applied), and the log holds exactly one record naming the sequence,
    the fold and a bounded reason."""
    events = [finding(project, "one", 1), finding(project, "boom", 2), finding(project, "two", 3)]
    acks = await bus.publish_many(events)
    first, second = Watcher(projects=[project]), Watcher(projects=[project])
    async with running(bus, first) as k1, running(bus, second) as k2:
        await k1.wait_acted(acks[-1].seq)
        await k2.wait_acted(acks[-1].seq)
        [record] = await records(bus, project)
        await k1.wait_acted(await bus.stream_last_seq())  # each folds the record back
        await k2.wait_acted(await bus.stream_last_seq())
        for kernel in (k1, k2):
            states = kernel.states[project]
            assert states["sturdy"].messages == ["one", "boom", "two"]
            assert states["fragile"].messages == ["one", "boom", "two"]
            assert kernel.skipped == 1
    assert (record.original_seq, record.fold) == (acks[1].seq, "fragile")
    assert record.original_kind == "finding.raised.v1"
    assert record.reason.startswith("RecursionError: maximum recursion depth")
    assert record.actor.role == "system"
    assert len(await records(bus, project)) == 1, "a restart or a second daemon records none"


async def test_a_restarted_daemon_records_nothing_again(bus: Bus, project: str) -> None:
    """The same failure met again after a restart is already on the log: nothing new."""
    ack = (await bus.publish_many([finding(project, "boom", 1)]))[0]
    async with running(bus, Watcher(projects=[project])) as kernel:
        await kernel.wait_acted(ack.seq)
        await kernel.wait_acted(await bus.stream_last_seq())
    async with running(bus, Watcher(projects=[project])) as kernel:
        await kernel.wait_acted(await bus.stream_last_seq())
        assert kernel.skipped == 1
    assert len(await records(bus, project)) == 1


def test_replay_skips_what_the_daemons_skip_and_shows_it_as_a_finding() -> None:
    """``apply_all`` (what replay folds with) applies the same rule: the failing fold is
    skipped and reported, the others apply; the record itself is an open finding."""
    project = "p"
    states = initial_states()
    failures: list[FoldFailure] = []
    good = finding(project, "fine", 1)
    broken = msgspec.structs.replace(finding(project, "bad", 2), target=None)  # never decodes
    apply_all(states, good, failures)
    apply_all(states, broken, failures)
    assert [f.fold for f in failures] == ["findings"]
    assert [f.message for f in findings_fold.open_findings(states["findings"])] == ["fine"]
    fact = FoldQuarantined(
        project=project,
        actor=Actor(role="system", principal="t"),
        original_seq=7,
        original_subject=f"loop.{project}.finding.reviewer",
        original_kind="finding.raised.v1",
        fold="units",
        reason="RecursionError: deep",
    )
    apply_all(states, fact)
    [shown] = [f for f in findings_fold.open_findings(states["findings"]) if f.id == fact.id]
    assert (shown.cls, shown.target, shown.owner) == ("quarantined", "record:seq-7", "standards")
    forged = msgspec.structs.replace(fact, actor=REVIEWER, original_seq=8)
    apply_all(states, forged)
    assert len(findings_fold.open_findings(states["findings"])) == 2, "only the system records"
