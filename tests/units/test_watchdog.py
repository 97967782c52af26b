"""The watchdog: silence becomes LOST; a wait past its budget becomes one finding, owned by
whoever owns the blocker."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timedelta
from typing import Any

import pytest
from unitkit import (
    BUILDER,
    answered,
    claim,
    log_events,
    plan,
    transitions,
    units_daemon,
    wait_log,
)

from bus import HEARTBEAT_BUCKET, Bus, connect
from projections import units as units_fold
from schemas import Actor, Event, FindingRaised, UnitTransitioned
from schemas.reports import HeartbeatReport, encode_heartbeat, heartbeat_key
from workers.gates.declared import DeclaredChecks
from workers.kernel import Kernel
from workers.runtime import cancel_all
from workers.watchdog.daemon import Watchdog
from workers.watchdog.limits import Limits, parse_limits


class DogUnderTest:
    """The real watchdog folding one project, whose sweeps the test calls at chosen times."""

    def __init__(self, kernel: Kernel, dog: Watchdog, project: str) -> None:
        self.kernel = kernel
        self.heartbeats = dog.heartbeats
        self.project = project

    async def sweep(self, now: datetime) -> list[Event]:
        # As the kernel does: decide only on a state that holds this daemon's own last facts.
        kernel, project = self.kernel, self.project
        await kernel.until(lambda: kernel.folded >= kernel.barrier.get(project, 0), 15)
        return await kernel.act_on(project, now=now)


@contextlib.asynccontextmanager
async def watchdog(
    url: str, project: str, limits: Limits, checks: DeclaredChecks | None = None
) -> AsyncIterator[DogUnderTest]:
    """The real watchdog on its own connection, folding ``project`` and following the
    heartbeats; sweeps are the test's to call, with an explicit time."""
    connection = await connect(url, name="watchdog-under-test")
    dog = Watchdog(connection, limits, projects=[project], checks=checks)
    kernel = Kernel(connection, dog)
    await dog.start(kernel)
    follower = asyncio.create_task(kernel.follow())
    try:
        await asyncio.wait_for(kernel.reached_end.wait(), 15)
        yield DogUnderTest(kernel, dog, project)
    finally:
        await cancel_all([follower, *kernel.sensors])
        await connection.close()


async def start(bus: Bus, url: str, project: str, units: Sequence[str]) -> None:
    """Plan ``units`` in slice S1 and have the units daemon move each to WORKING."""
    await plan(bus, project, {"S1": list(units)})
    async with units_daemon(url, project):
        for unit in units:
            report = claim(project, unit, "started")
            await bus.publish(report)
            await wait_log(bus, project, answered(report))


def view(dog: DogUnderTest, project: str, unit: str) -> units_fold.UnitView:
    return dog.kernel.project_states(project)["units"].units[unit]


async def heartbeat(bus: Bus, project: str, unit: str, actor: Actor = BUILDER) -> None:
    """A beat for ``unit`` naming ``actor`` (by default the builder that started it)."""
    beats = await bus.bucket(HEARTBEAT_BUCKET)
    beat = HeartbeatReport(project=project, unit=unit, actor=actor)
    await beats.put(heartbeat_key(project, unit), encode_heartbeat(beat))


async def test_a_silent_working_unit_is_lost_after_the_lapse_with_its_outcome(
    bus: Bus, nats_url: str, project: str
) -> None:
    """A silent WORKING unit is LOST just after the 1 s lapse, with an outcome naming it."""
    await start(bus, nats_url, project, ["U1"])
    async with watchdog(nats_url, project, Limits(lapse_s=1.0)) as dog:
        since = view(dog, project, "U1").since
        assert since is not None
        assert await dog.sweep(since + timedelta(seconds=1.0)) == []
        lost = await dog.sweep(since + timedelta(seconds=1.001))
    assert len(lost) == 1 and isinstance(lost[0], UnitTransitioned)
    events = await log_events(bus, project)
    moved = transitions(events, "U1")
    assert moved[-1] == lost[0]
    assert (moved[-1].prior, moved[-1].state, moved[-1].by) == (
        "working",
        "lost",
        "heartbeat-lapse",
    )
    outcome = moved[-1].outcome
    assert outcome is not None
    assert (outcome.ended_by, outcome.last_heartbeat, outcome.lapse_s) == (
        "heartbeat-lapse",
        None,
        1.0,
    )
    assert "last heartbeat: never" in outcome.summary


async def test_a_heartbeat_just_before_the_lapse_keeps_the_unit_alive(
    bus: Bus, nats_url: str, project: str
) -> None:
    """A heartbeat inside the lapse keeps a unit WORKING while its silent sibling is LOST."""
    await start(bus, nats_url, project, ["U1", "U2"])
    async with watchdog(nats_url, project, Limits(lapse_s=1.0)) as dog:
        await heartbeat(bus, project, "U1")
        await dog.heartbeats.until(
            lambda: dog.heartbeats.of(project, "U1", BUILDER) is not None, 10
        )
        beat = dog.heartbeats.of(project, "U1", BUILDER)
        since = max(view(dog, project, u).since for u in ("U1", "U2"))  # type: ignore[type-var]
        assert beat is not None and since is not None and beat > since
        # Past the lapse from both starts, inside it from U1's heartbeat.
        now = since + timedelta(seconds=1.0) + (beat - since) / 2
        first = await dog.sweep(now)
        assert [e.unit for e in first if isinstance(e, UnitTransitioned)] == ["U2"]
        assert view(dog, project, "U1").state == "working"
        later = await dog.sweep(beat + timedelta(seconds=1.001))
    assert [e.unit for e in later if isinstance(e, UnitTransitioned)] == ["U1"]
    outcome = later[0].outcome  # type: ignore[union-attr]
    assert outcome is not None and outcome.last_heartbeat == beat


async def test_blocked_and_terminal_units_are_never_lost(
    bus: Bus, nats_url: str, project: str
) -> None:
    """A unit that declared a block, or that gave up, is not LOST however long it is silent."""
    await plan(bus, project, {"S1": ["U1", "U2", "U3"]})
    async with units_daemon(nats_url, project):
        reports = [
            claim(project, "U1", "started"),
            claim(project, "U2", "started"),
            claim(project, "U1", "blocked", reason="awaiting-dependency", subject="U3"),
            claim(project, "U2", "gave-up", why="the API is gone"),
        ]
        for report in reports:
            await bus.publish(report)
        await wait_log(bus, project, lambda evs: all(answered(r)(evs) for r in reports))
    async with watchdog(nats_url, project, Limits(lapse_s=1.0)) as dog:
        lost = await dog.sweep(datetime.now().astimezone() + timedelta(days=1))
    assert [e for e in lost if isinstance(e, UnitTransitioned)] == []


OWNERS = [
    pytest.param("awaiting-operator", None, "operator", "record", id="operator"),
    pytest.param("awaiting-dependency", "U2", "builder:U2", "record:U2", id="dependency"),
    pytest.param("awaiting-gate", "tests", "gate:tests", "check:tests", id="project-gate"),
    pytest.param("awaiting-gate", "lint", "standards", "check:lint", id="profile-gate"),
    pytest.param(
        "awaiting-capacity", "tokens_per_unit", "standards", "budget:tokens_per_unit", id="capacity"
    ),
]


@pytest.mark.parametrize(("reason", "subject", "owner", "target"), OWNERS)
async def test_a_wait_past_its_budget_raises_one_finding_for_the_blockers_owner(
    bus: Bus, nats_url: str, project: str, reason: str, subject: str | None, owner: str, target: str
) -> None:
    """A wait past budget raises one finding, owned by the blocker's owner, even after restart."""
    from schemas import Actor, parse_target

    await plan(bus, project, {"S1": ["U1", "U2"]})
    if subject is None:
        question = FindingRaised(
            project=project,
            actor=Actor(role="builder", principal="b"),
            producer="builder",
            target=parse_target("plan:S1"),
            severity="medium",
            message="which storage engine?",
        )
        await bus.publish(question)
        subject = question.id
        target = f"record:{question.id}"
    checks = DeclaredChecks(project, {"tests": "project", "lint": "profile:cli@1"})
    async with units_daemon(nats_url, project, checks=checks):
        for report in (
            claim(project, "U1", "started"),
            claim(project, "U1", "blocked", reason=reason, subject=subject),
        ):
            await bus.publish(report)
            await wait_log(bus, project, answered(report))
    limits = parse_limits(budgets=["30m", f"{reason}=60s"])
    async with watchdog(nats_url, project, limits, checks) as dog:
        opened = view(dog, project, "U1").blocked_since
        assert opened is not None
        assert await dog.sweep(opened + timedelta(seconds=60)) == []
        raised = await dog.sweep(opened + timedelta(seconds=61))
        again = await dog.sweep(opened + timedelta(seconds=3600))
    async with watchdog(nats_url, project, limits, checks) as restarted:
        after_restart = await restarted.sweep(opened + timedelta(seconds=7200))
    assert again == [] and after_restart == []
    assert len(raised) == 1 and isinstance(raised[0], FindingRaised)
    finding = raised[0]
    from schemas import format_target

    assert (finding.cls, finding.owner, format_target(finding.target)) == (
        "wait-budget",
        owner,
        target,
    )
    assert finding.owner != "builder:U1" and finding.unit == "U1"
    assert finding.evidence["block"] == view(dog, project, "U1").block_id
    events = await log_events(bus, project)
    assert [e for e in events if isinstance(e, FindingRaised) and e.cls == "wait-budget"] == [
        finding
    ]


async def test_a_new_block_gets_its_own_wait_budget_finding(
    bus: Bus, nats_url: str, project: str
) -> None:
    """Once per block, not per unit: a second block past its budget raises a second finding."""
    await plan(bus, project, {"S1": ["U1", "U2"]})
    block = {"reason": "awaiting-dependency", "subject": "U2"}
    limits = parse_limits(budgets=["60s"])
    async with units_daemon(nats_url, project):
        for report in (claim(project, "U1", "started"), claim(project, "U1", "blocked", **block)):
            await bus.publish(report)
            await wait_log(bus, project, answered(report))
        async with watchdog(nats_url, project, limits) as dog:
            first_open = view(dog, project, "U1").blocked_since
            assert first_open is not None
            first = await dog.sweep(first_open + timedelta(seconds=61))
            for report in (
                claim(project, "U1", "unblocked"),
                claim(project, "U1", "blocked", **block),
            ):
                await bus.publish(report)
                await wait_log(bus, project, answered(report))
            # Unblocked (None) is not enough: wait for the second block to be folded.
            await dog.kernel.until(
                lambda: view(dog, project, "U1").blocked_since not in (None, first_open), 10
            )
            second_open = view(dog, project, "U1").blocked_since
            assert second_open is not None
            second = await dog.sweep(second_open + timedelta(seconds=61))
    assert len(first) == len(second) == 1
    assert first[0].evidence["block"] != second[0].evidence["block"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("lapses", "budgets", "says"),
    [
        pytest.param(["soon"], [], "--heartbeat-lapse", id="bad-lapse"),
        pytest.param(["bad project=5m"], [], "not a project id", id="bad-project"),
        pytest.param([], ["awaiting-godot=5m"], "awaiting-operator", id="bad-reason"),
    ],
)
def test_limits_refuse_what_is_not_a_duration_a_project_or_a_reason(
    lapses: list[str], budgets: list[str], says: str
) -> None:
    """A malformed --heartbeat-lapse or --wait-budget is refused naming the option and fix."""
    from schemas import InvalidValue

    with pytest.raises(InvalidValue, match=says):
        parse_limits(lapses, budgets)


def test_limits_apply_per_project_and_per_reason() -> None:
    """`90s` sets the default lapse, `demo=5m` one project's; budgets likewise per reason."""
    limits = parse_limits(["90s", "demo=5m"], ["45m", "awaiting-operator=2h"])
    assert (limits.lapse_for("other"), limits.lapse_for("demo")) == (90.0, 300.0)
    assert (limits.budget_for("awaiting-gate"), limits.budget_for("awaiting-operator")) == (
        2700.0,
        7200.0,
    )
    assert (parse_limits().lapse_s, parse_limits().wait_budget_s) == (300.0, 1800.0)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(b"alive!", id="not-a-heartbeat"),
        pytest.param("other-unit", id="another-units-heartbeat"),
        pytest.param("reviewer", id="a-role-that-cannot-speak-for-a-unit"),
    ],
)
async def test_only_a_units_own_heartbeat_keeps_it_alive(
    bus: Bus, nats_url: str, project: str, value: Any
) -> None:
    """Garbage, another unit's heartbeat or a non-claimant's value under a unit's key does
    not count as that unit's heartbeat: the silent unit is still LOST at the lapse."""
    await start(bus, nats_url, project, ["U1"])
    kv = await bus.bucket(HEARTBEAT_BUCKET)
    if value == "other-unit":
        actor = claim(project, "U2", "started").actor
        data = encode_heartbeat(HeartbeatReport(project=project, unit="U2", actor=actor))
    elif value == "reviewer":
        actor = Actor(role="reviewer", principal="r1")
        data = encode_heartbeat(HeartbeatReport(project=project, unit="U1", actor=actor))
    else:
        data = value
    async with watchdog(nats_url, project, Limits(lapse_s=1.0)) as dog:
        await kv.put(heartbeat_key(project, "U1"), data)
        await heartbeat(bus, project, "U0")  # a valid beat after it: the feed has moved past
        await dog.heartbeats.until(
            lambda: dog.heartbeats.of(project, "U0", BUILDER) is not None, 10
        )
        assert dog.heartbeats.of(project, "U1", BUILDER) is None
        since = view(dog, project, "U1").since
        assert since is not None
        lost = await dog.sweep(since + timedelta(seconds=1.001))
    assert [e.unit for e in lost if isinstance(e, UnitTransitioned)] == ["U1"]


STRANGER = Actor(role="builder", principal="mallory")


def beat_findings(events: Sequence[Event]) -> list[tuple[str, str]]:
    """(unit, beater) of every foreign-heartbeat finding among ``events``."""
    return [
        (e.evidence["unit"], e.evidence["beater"])
        for e in events
        if isinstance(e, FindingRaised) and e.criterion == units_fold.FOREIGN_BEAT_CRITERION
    ]


async def test_only_the_holders_beat_counts_and_a_stranger_is_named_once(
    bus: Bus, nats_url: str, project: str
) -> None:
    """Only the beat of the builder whose start was accepted keeps a unit alive: U1, beaten
    by its holder, stays WORKING; U2, beaten only by another builder principal, is LOST at
    the lapse. The stranger is named once per unit it beat for, however often it beats,
    and a restarted watchdog does not name it again."""
    await start(bus, nats_url, project, ["U1", "U2"])
    async with watchdog(nats_url, project, Limits(lapse_s=1.0)) as dog:
        await heartbeat(bus, project, "U1")
        for _ in range(3):
            await heartbeat(bus, project, "U2", STRANGER)
        await heartbeat(bus, project, "U1", STRANGER)  # the latest value under U1's key

        def seen() -> bool:
            return all(dog.heartbeats.of(project, u, STRANGER) for u in ("U1", "U2"))

        await dog.heartbeats.until(seen, 10)
        beat = dog.heartbeats.of(project, "U1", BUILDER)
        since = max(view(dog, project, u).since for u in ("U1", "U2"))  # type: ignore[type-var]
        assert beat is not None and since is not None and beat > since
        # Past the lapse from both starts and every beat of U2; inside it from U1's holder.
        now = since + timedelta(seconds=1.0) + (beat - since) / 2
        stranger_u2 = dog.heartbeats.of(project, "U2", STRANGER)
        assert stranger_u2 is not None and now < stranger_u2 + timedelta(seconds=1.0)
        first = await dog.sweep(now)
        assert [e.unit for e in first if isinstance(e, UnitTransitioned)] == ["U2"]
        assert sorted(beat_findings(first)) == [
            ("U1", "builder:mallory"),
            ("U2", "builder:mallory"),
        ]
        earlier = dog.heartbeats.of(project, "U1", STRANGER)
        await heartbeat(bus, project, "U1", STRANGER)  # beating on: no second finding
        await dog.heartbeats.until(
            lambda: dog.heartbeats.of(project, "U1", STRANGER) != earlier, 10
        )
        assert beat_findings(await dog.sweep(now)) == []
    async with watchdog(nats_url, project, Limits(lapse_s=1.0)) as restarted:
        await restarted.heartbeats.until(
            lambda: restarted.heartbeats.of(project, "U1", STRANGER) is not None, 10
        )
        assert beat_findings(await restarted.sweep(now)) == []
    named = beat_findings(await log_events(bus, project))
    assert sorted(named) == [("U1", "builder:mallory"), ("U2", "builder:mallory")]
    [finding] = [
        e
        for e in await log_events(bus, project)
        if isinstance(e, FindingRaised) and e.evidence.get("unit") == "U2"
    ]
    assert (finding.cls, finding.actor.role, finding.evidence["holder"]) == (
        "forgery",
        "system",
        "builder:test-builder",
    )
    assert "builder:mallory" in finding.message and finding.unit is None
