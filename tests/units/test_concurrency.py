"""Optimistic concurrency: two units daemons, or one restarted, never answer a claim twice
and never publish contradictory transitions."""

from __future__ import annotations

import asyncio
from collections import Counter

from unitkit import (
    SHA_A,
    all_answered,
    answer_of,
    answered,
    claim,
    log_events,
    plan,
    transitions,
    units_daemon,
    wait_log,
)

from bus import Bus, connect, read
from projections.transitions import audit
from schemas import (
    Actor,
    FindingRaised,
    UnitTransitioned,
    encode_event,
    parse_target,
    project_subjects,
    subject_of,
)
from schemas.reports import UnitReport
from workers.kernel import Kernel
from workers.units.daemon import Units


def reports_of(events: list) -> list[UnitReport]:
    from schemas.reports import UNIT_REPORT_TYPES

    return [e for e in events if isinstance(e, UNIT_REPORT_TYPES)]


def answers_per_report(events: list) -> Counter[str]:
    """How many answers (transitions or refusals) each report got."""
    counts: Counter[str] = Counter()
    for report in reports_of(events):
        counts[report.id] = sum(1 for e in events if answer_of(e, report))
    return counts


async def test_two_daemons_racing_answer_every_claim_once(
    bus: Bus, nats_url: str, project: str
) -> None:
    """Two units daemons racing on a burst of claims answer each claim exactly once."""
    units = ["U1", "U2", "U3"]
    await plan(bus, project, {"S1": units})
    script = []
    for unit in units:
        sibling = units[(units.index(unit) + 1) % len(units)]
        script += [
            claim(project, unit, "started"),
            claim(project, unit, "started"),  # refused: already started
            claim(project, unit, "blocked", reason="awaiting-dependency", subject=sibling),
            claim(project, unit, "commit", sha=SHA_A),  # refused: blocked
            claim(project, unit, "unblocked"),
            claim(project, unit, "commit", sha=SHA_A),
            claim(project, unit, "blocked", reason="awaiting-gate", subject=""),  # refused
            claim(project, unit, "gave-up", why="out of ideas"),
        ]
    async with units_daemon(nats_url, project) as first, units_daemon(nats_url, project) as second:
        for report in script:
            await bus.publish(report)
        await wait_log(bus, project, all_answered(script), timeout=30)
        published = first.published + second.published
    assert published >= len(script)
    events = await log_events(bus, project)
    assert audit(events) == []
    assert set(answers_per_report(events).values()) == {1}
    for unit in units:
        assert [(t.prior, t.state) for t in transitions(events, unit)] == [
            (None, "working"),
            ("working", "blocked"),
            ("blocked", "working"),
            ("working", "working"),
            ("working", "failed"),
        ]


def units_kernel(connection: Bus, project: str) -> Kernel:
    """A units daemon's kernel that a test drives by hand: it folds what it is fed and
    decides when told, so two of them can be made to decide from different views."""
    return Kernel(connection, Units(projects=[project]))


async def _fold_into(daemon: Kernel, bus: Bus, project: str, skip: set[str]) -> None:
    """Feed ``daemon`` the project's log it has not seen (without acting), but ``skip``."""
    start = daemon.folded + 1
    async for record in read(bus, subjects=[project_subjects(project)], start_seq=start):
        if record.event is not None and record.event.id not in skip:
            daemon.fold_record(record)


async def test_the_daemon_that_loses_a_race_publishes_nothing_over_the_winner(
    bus: Bus, nats_url: str, project: str
) -> None:
    """The daemon that loses a race on a unit's subject publishes nothing over the winner."""
    await plan(bus, project, {"S1": ["U1"]})
    started = claim(project, "U1", "started")
    await bus.publish(started)
    a_bus, b_bus = await connect(nats_url), await connect(nats_url)
    try:
        a, b = units_kernel(a_bus, project), units_kernel(b_bus, project)
        await _fold_into(a, bus, project, set())
        await _fold_into(b, bus, project, set())
        await a.act_on(project)
        await b.act_on(project)
        assert (a.published, b.published) == (1, 0)
        await _fold_into(b, bus, project, set())
        assert b.project_states(project)["units"].claims == {}
    finally:
        await a_bus.close()
        await b_bus.close()
    events = await log_events(bus, project)
    assert [t.cause for t in transitions(events)] == [started.id]


async def test_a_stale_refusal_cannot_contradict_a_transition(
    bus: Bus, nats_url: str, project: str
) -> None:
    """A stale refusal and a fresh transition share an id: the log keeps only one."""
    await plan(bus, project, {"S1": ["U1"]})
    question = FindingRaised(
        project=project,
        actor=Actor(role="builder", principal="b"),
        producer="builder",
        target=parse_target("plan:S1"),
        severity="medium",
        message="which way?",
    )
    await bus.publish(question)
    async with units_daemon(nats_url, project):
        started = claim(project, "U1", "started")
        await bus.publish(started)
        await wait_log(bus, project, lambda evs: any(answer_of(e, started) for e in evs))
    blocked = claim(project, "U1", "blocked", reason="awaiting-operator", subject=question.id)
    await bus.publish(blocked)
    a_bus, b_bus = await connect(nats_url), await connect(nats_url)
    try:
        informed, stale = units_kernel(a_bus, project), units_kernel(b_bus, project)
        await _fold_into(informed, bus, project, set())
        await _fold_into(stale, bus, project, {question.id})
        await informed.act_on(project)
        await stale.act_on(project)  # refuses: "not an open finding" — published as a duplicate
        assert (informed.published, stale.published) == (1, 1)
    finally:
        await a_bus.close()
        await b_bus.close()
    events = await log_events(bus, project)
    answers = [e for e in events if answer_of(e, blocked)]
    assert len(answers) == 1 and isinstance(answers[0], UnitTransitioned)
    assert answers[0].state == "blocked"
    assert audit(events) == []


async def test_a_restarted_daemon_answers_only_what_is_left(
    bus: Bus, nats_url: str, project: str
) -> None:
    """A restarted units daemon answers only the claims made while it was down."""
    await plan(bus, project, {"S1": ["U1", "U2"]})
    before = [claim(project, "U1", "started"), claim(project, "U1", "started")]
    while_down = [claim(project, "U2", "started"), claim(project, "U1", "commit", sha=SHA_A)]
    async with units_daemon(nats_url, project):
        for report in before:
            await bus.publish(report)
        await wait_log(bus, project, all_answered(before))
    for report in while_down:
        await bus.publish(report)
    async with units_daemon(nats_url, project) as restarted:
        await wait_log(bus, project, all_answered(before + while_down))
        await asyncio.wait_for(restarted.wait_acted(await bus.stream_last_seq()), 10)
        # Every publication counts, a duplicate of an old answer too: only the two new
        # claims were answered.
        assert restarted.published == len(while_down)
    events = await log_events(bus, project)
    assert set(answers_per_report(events).values()) == {1}
    assert len(answers_per_report(events)) == len(before) + len(while_down)
    assert audit(events) == []


async def test_a_re_stored_report_is_answered_again_and_the_unit_moves_on(
    bus: Bus, nats_url: str, project: str
) -> None:
    """A copy of a report's own bytes stored again (same id, no Msg-Id) gets its own answer,
    so it cannot freeze the unit: the next report is still answered."""
    await plan(bus, project, {"S1": ["U1"]})
    started = claim(project, "U1", "started")
    later = claim(project, "U1", "commit", sha=SHA_A)
    async with units_daemon(nats_url, project):
        await bus.publish(started)
        await wait_log(bus, project, answered(started))
        # The attacker's move: the same bytes again, published without a Msg-Id header.
        await bus.js.publish(subject_of(started), encode_event(started))
        await bus.publish(later)
        events = await wait_log(bus, project, answered(later))
    answers = [e for e in events if answer_of(e, started)]
    assert len(answers) == 2, "each occurrence of the report is answered once"
    assert len({a.id for a in answers}) == 2
    assert isinstance(answers[1], FindingRaised)  # the copy: refused, the unit already started
    assert [(t.prior, t.state) for t in transitions(events, "U1")] == [
        (None, "working"),
        ("working", "working"),
    ]
