"""Ready is not done: readiness comes only from a verified gate suite for the unit's head,
DONE only from the merger's fact, and every other daemon's transition obeys the table."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from unitkit import SHA_A, SHA_B, answered, claim, log_events, plan, transitions, units_daemon
from unitkit import wait_log as wait

from bus import Bus, read
from projections import claims
from projections import integrity as integrity_fold
from projections import units as units_fold
from projections.claims import Move, Refusal, transition_event
from projections.transitions import audit
from schemas import Actor, Event, Outcome, UnitPlanned, UnitTransitioned, project_subjects
from schemas.gates import (
    GateRunnerKeyRegistered,
    GateSuiteCompleted,
    SuiteEntry,
    canonical_bytes,
)
from schemas.ids import new_id
from workers.kernel.oneshot import transition_unit

SYSTEM = Actor(role="system", principal="test-gate-runner")


class Runner:
    """A stand-in gate runner with a real ed25519 key: it registers, and signs suites."""

    def __init__(self, name: str = "r1"):
        self.name = name
        self.key = Ed25519PrivateKey.generate()

    def registration(self, project: str) -> GateRunnerKeyRegistered:
        raw = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return GateRunnerKeyRegistered(
            project=project,
            actor=SYSTEM,
            runner=self.name,
            public_key=base64.b64encode(raw).decode(),
        )

    def suite(
        self, project: str, unit: str, commit: str, outcome: str, cause: str, *, sign: bool = True
    ) -> GateSuiteCompleted:
        entry = SuiteEntry(
            check="tests",
            outcome=outcome,
            cached=False,
            result=new_id(),
            duration_s=0.5,  # type: ignore[arg-type]
        )
        suite = GateSuiteCompleted(
            project=project,
            actor=SYSTEM,
            commit=commit,
            tree=commit,
            unit=unit,
            reason="unit",
            cause=cause,
            outcome=outcome,  # type: ignore[arg-type]
            checks=[entry],
            runner=self.name,
        )
        if not sign:
            return suite
        signature = base64.b64encode(self.key.sign(canonical_bytes(suite))).decode()
        return msgspec.structs.replace(suite, signature=signature)


def asked(events: list[Event], report: Event) -> str:
    """The id of the commit transition answering ``report``: the ask a unit suite answers."""
    return next(t.id for t in transitions(events) if t.cause == report.id and t.by == "commit")


def ready_moves(events: list[Event], unit: str) -> list[UnitTransitioned]:
    return [t for t in transitions(events, unit) if t.by == "gates"]


async def test_a_verified_passing_suite_for_the_head_makes_the_unit_ready(
    bus: Bus, nats_url: str, project: str
) -> None:
    """Only a signed passing suite answering the system's own ask for the head sets ready
    (never a stale, unsigned or someone else's suite); a new commit clears it."""
    await plan(bus, project, {"S1": ["U1", "U2"]})
    runner = Runner()
    await bus.publish(runner.registration(project))
    async with units_daemon(nats_url, project):
        commits = {}
        for unit in ("U1", "U2"):
            for report in (
                claim(project, unit, "started"),
                claim(project, unit, "commit", sha=SHA_A),
            ):
                await bus.publish(report)
                events = await wait(bus, project, answered(report))
            commits[unit] = asked(events, report)
        forged = runner.suite(project, "U2", SHA_A, "pass", commits["U2"], sign=False)
        stale = runner.suite(project, "U1", SHA_B, "pass", commits["U1"])
        subset = runner.suite(project, "U1", SHA_A, "pass", new_id())  # someone else's ask
        good = runner.suite(project, "U1", SHA_A, "pass", commits["U1"])
        for suite in (forged, stale, subset, good):
            await bus.publish(suite)
        events = await wait(bus, project, lambda evs: bool(ready_moves(evs, "U1")))
        recommit = claim(project, "U1", "commit", sha=SHA_B)
        await bus.publish(recommit)
        events = await wait(bus, project, answered(recommit))
    ready = ready_moves(events, "U1")
    assert len(ready) == 1
    assert (ready[0].state, ready[0].ready, ready[0].cause, ready[0].commit) == (
        "working",
        True,
        good.id,
        SHA_A,
    )
    assert ready_moves(events, "U2") == []
    after = transitions(events, "U1")[-1]
    assert (after.by, after.ready, after.commit) == ("commit", False, SHA_B)
    assert audit(events) == []


async def test_only_the_mergers_fact_makes_a_ready_unit_done(
    bus: Bus, nats_url: str, project: str
) -> None:
    """The merger's transition makes a ready unit DONE, refuses an unready one, stores once."""
    await plan(bus, project, {"S1": ["U1"]})
    runner = Runner()
    await bus.publish(runner.registration(project))
    merger = Actor(role="system", principal="test-merger")
    merge_fact = new_id()

    def merge(state: units_fold.UnitsState, view: units_fold.UnitView) -> Move | Refusal:
        return claims.merged(view, merge_fact, "merged into trunk at c0ffee; trunk green")

    async with units_daemon(nats_url, project):
        for report in (claim(project, "U1", "started"), claim(project, "U1", "commit", sha=SHA_A)):
            await bus.publish(report)
            events = await wait(bus, project, answered(report))
        early = await transition_unit(bus, project, "U1", merge, actor=merger, salt="merged")
        await bus.publish(runner.suite(project, "U1", SHA_A, "pass", asked(events, report)))
        await wait(bus, project, lambda evs: bool(ready_moves(evs, "U1")))
    done = await transition_unit(bus, project, "U1", merge, actor=merger, salt="merged")
    again = await transition_unit(bus, project, "U1", merge, actor=merger, salt="merged")
    assert isinstance(early, Refusal) and early.code == "not-ready"
    assert isinstance(done, UnitTransitioned) and done.state == "done"
    assert done.outcome is not None and done.outcome.ended_by == "merge"
    assert isinstance(again, Refusal) and again.code == "not-ready"  # DONE is terminal
    events = await log_events(bus, project)
    assert [t.state for t in transitions(events, "U1")] == ["working", "working", "working", "done"]
    assert audit(events) == []


async def test_a_held_unit_starts_once_dispatched_and_halts_as_failed(
    bus: Bus, nats_url: str, project: str
) -> None:
    """A held unit is not unblocked by its builder, starts on `started`, halts as FAILED."""
    await plan(bus, project, {"S1": ["U1", "U2"]})
    dispatcher = Actor(role="system", principal="test-dispatcher")
    held = await transition_unit(
        bus,
        project,
        "U2",
        lambda state, view: claims.hold(state, view, "U1", None),
        actor=dispatcher,
        salt="hold",
    )
    assert isinstance(held, UnitTransitioned) and held.block is not None
    async with units_daemon(nats_url, project):
        unblock = claim(project, "U2", "unblocked")
        start = claim(project, "U2", "started")
        for report in (unblock, start):
            await bus.publish(report)
            await wait(bus, project, answered(report))
    halted = await transition_unit(
        bus,
        project,
        "U2",
        lambda state, view: claims.halt(view, None, "stalled: the same two findings twice"),
        actor=Actor(role="system", principal="test-convergence"),
        salt="halt",
    )
    events = await log_events(bus, project)
    assert [(t.prior, t.state, t.by) for t in transitions(events, "U2")] == [
        (None, "blocked", "hold"),
        ("blocked", "working", "started"),
        ("working", "failed", "halted"),
    ]
    refusal = next(e for e in events if getattr(e, "evidence", {}).get("report") == unblock.id)
    assert refusal.criterion == "held"  # type: ignore[union-attr]
    assert isinstance(halted, UnitTransitioned) and halted.outcome is not None
    assert halted.outcome.ended_by == "halted"
    assert audit(events) == []


def test_a_units_whole_life_obeys_the_table() -> None:
    """A unit's whole life to DONE obeys the table and counts its wait per reason and slice."""
    actor = Actor(role="system", principal="t")
    t0 = datetime(2030, 1, 1, tzinfo=UTC)
    events: list[Event] = [UnitPlanned(project="p", actor=actor, unit="U1", slice="S1", at=t0)]
    state = units_fold.FOLD.fold(events)

    def add(event: Event, second: int) -> None:
        nonlocal state
        event = msgspec.structs.replace(event, at=t0.replace(second=second))
        events.append(event)
        state = units_fold.apply(state, event)

    def step(move: Move | Refusal | None, second: int) -> None:
        assert isinstance(move, Move), move
        add(transition_event(move, "p", actor, new_id()), second)

    def report(verb: str, second: int, **fields: str) -> None:
        claimed = claim("p", "U1", verb, **fields)
        add(claimed, second)
        step(claims.decide(state, claimed), second)

    view = state.units["U1"]
    report("started", 1)
    step(claims.escalate(view, "F1", claims.References(open_findings={"F1"}), "c2"), 2)
    report("unblocked", 12)
    report("commit", 13, sha=SHA_A)
    step(claims.gates(view, SHA_A, True, "s1"), 14)
    step(claims.returned(view, "v1"), 15)
    assert view.gated_by == "s1"  # the daemon counts each suite once: s1 will not re-ready it
    step(claims.gates(view, SHA_A, True, "s2"), 16)
    step(claims.merged(view, "m1", "merged"), 17)
    assert [e.state for e in events if isinstance(e, UnitTransitioned)][-1] == "done"
    assert audit(events) == []
    assert units_fold.time_in_wait(state, "S1") == {"awaiting-operator": 10.0}
    assert view.waited_s == {"awaiting-operator": 10.0}


async def test_a_transition_published_by_an_agent_changes_nothing(bus: Bus, project: str) -> None:
    """A builder publishing a 'merged' transition itself does not make its unit done (nor
    ready): only the system transitions units; the attempt is counted for the audit."""
    builder = Actor(role="builder", principal="evil")
    await bus.publish(UnitPlanned(project=project, actor=SYSTEM, unit="U9", slice="S1"))
    forged = [
        UnitTransitioned(project=project, actor=builder, unit="U9", state="done", by="merged",
                         outcome=Outcome(summary="trust me", ended_by="merge")),
        UnitTransitioned(project=project, actor=builder, unit="U9", state="working",
                         ready=True, by="gates"),
    ]  # fmt: skip
    await bus.publish_many(forged)
    records = [r.event async for r in read(bus, subjects=[project_subjects(project)])]
    events = [e for e in records if e is not None]
    view = units_fold.FOLD.fold(events).units["U9"]
    assert view.state is None and not view.ready
    counted = integrity_fold.FOLD.fold(events)
    assert counted.forged == 2 and list(counted.unreported) == [f.id for f in forged]
