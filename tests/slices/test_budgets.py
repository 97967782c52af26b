"""The machinery budget: measured per slice from the log, breaches raised once to standards."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec
import pytest
from kernelkit import running
from slice_helpers import (
    BUILDER,
    SYSTEM,
    accepted,
    gate_suite,
    plan,
    registration,
    transition,
    unit,
)

from bus import Bus, read
from projections import budgets
from schemas import Actor, Block, Event, FindingRaised, new_id, project_subjects
from schemas.gates import GateSuiteCompleted
from schemas.reviews import RoundClosed
from schemas.slices import BootResult, SliceBudgets, SliceClosed, UsageReport
from workers.gates.signing import Signer, load_or_create
from workers.kernel import Kernel
from workers.standards.daemon import Standards, breach_finding

P = "proj"
T0 = datetime(2026, 1, 1, tzinfo=UTC)

STANDARDS = Actor(role="system", principal="standards")


def suite(
    signer: Signer | None, project: str, unit_id: str, seconds: float, cached: list[bool]
) -> GateSuiteCompleted:
    """A suite run on ``unit_id``'s commit, signed by ``signer`` (``None``: unsigned)."""
    return gate_suite(signer, project, unit_id, seconds=seconds, cached=cached)


def rounds(project: str, unit_id: str, action: str, n: int) -> RoundClosed:
    return RoundClosed(
        project=project,
        actor=SYSTEM,
        unit=unit_id,
        round=n,
        head="e" * 40,
        failure_signature="sig",
        diff_digest="x",
        passed=False,
        convergence="converging",
        action=action,  # type: ignore[arg-type]
        cause=new_id(),
    )


def fold(*events: Event) -> budgets.BudgetsState:
    return budgets.FOLD.fold(events)


def measure(state: budgets.BudgetsState, name: str) -> budgets.Measure:
    return next(m for m in budgets.measures(state.slices["S1"]) if m.budget == name)


LIMITS = SliceBudgets(
    gate_wall_clock_s=60, tokens_per_unit=1000, rework_rounds=2, cache_hit_rate=0.5, wait_s=600
)


def test_every_measure_against_its_limit(signer: Signer) -> None:
    """Wall clock, tokens per delivered unit, rework, cache hit rate and wait are measured."""
    state = fold(
        registration(P, signer),
        *accepted(P, plan("S1", unit("U1"), unit("U2"), budgets=LIMITS)),
        transition(P, "U1", "working", by="started", at=T0),
        suite(signer, P, "U1", 42.0, [False, False, True, True]),
        suite(signer, P, "U2", 12.0, [True, False]),
        UsageReport(project=P, actor=BUILDER, unit="U1", tokens_in=700, tokens_out=100),
        UsageReport(project=P, actor=BUILDER, unit="U2", tokens_in=300, tokens_out=100),
        rounds(P, "U1", "continue", 1),
        rounds(P, "U1", "approved", 2),
        transition(P, "U1", "working", by="returned"),
        transition(P, "U1", "done", by="merged"),
    )
    assert measure(state, "gate_wall_clock").value == 42.0
    assert measure(state, "tokens_per_unit").value == 1200.0  # 1200 tokens, one delivered
    assert measure(state, "rework_rounds").value == 2.0  # one "continue", one "returned"
    assert measure(state, "cache_hit_rate").value == pytest.approx(0.5)
    assert budgets.breaches(state) == []  # nothing over, and ratios wait for the close


def test_each_way_a_unit_is_sent_back_counts_one_rework_round() -> None:
    """A review round that sends the unit back and the ``returned`` transition answering it
    are one rework round; a round that changed nothing and a retry of the failed unit are
    one each (what the dispatcher weighs a retry against)."""
    from schemas.reviews import RoundUnchanged
    from schemas.units import UnitTransitioned

    review = rounds(P, "U1", "continue", 1)
    answered = UnitTransitioned(
        project=P, actor=SYSTEM, unit="U1", state="working", prior="working", by="returned",
        cause=review.id,
    )  # fmt: skip
    unchanged = RoundUnchanged(
        project=P, actor=SYSTEM, unit="U1", round=2, rung=1, to_rung=2, status="completed",
        trigger=new_id(),
    )  # fmt: skip
    state = fold(*accepted(P, plan("S1", unit("U1"), budgets=LIMITS)), review, answered)
    assert state.slices["S1"].units["U1"].rework == 1
    budgets.apply(state, unchanged)
    budgets.apply(state, transition(P, "U1", "failed", by="gave-up"))
    budgets.apply(state, transition(P, "U1", "working", by="retried"))
    assert state.slices["S1"].units["U1"].rework == 3


def test_time_in_wait_counts_dispatched_units_per_reason() -> None:
    """Blocked spans of dispatched units are summed per reason; a hold is not machinery wait."""
    from schemas.slices import UnitDispatched

    dispatched = UnitDispatched(
        project=P, actor=SYSTEM, slice="S1", unit="U1", wave=0, sub_wave=0, position=0
    )
    state = fold(
        *accepted(P, plan("S1", unit("U1"), unit("U2", "U1"), budgets=LIMITS)),
        dispatched,
        transition(P, "U1", "working", by="started", at=T0),
        transition(
            P,
            "U1",
            "blocked",
            by="blocked",
            block=Block("awaiting-gate", "tests"),
            at=T0 + timedelta(seconds=10),
        ),
        transition(P, "U1", "working", by="unblocked", at=T0 + timedelta(seconds=400)),
        transition(
            P,
            "U2",
            "blocked",
            by="hold",
            block=Block("awaiting-dependency", "U1"),
            at=T0 + timedelta(seconds=401),
        ),
        transition(
            P,
            "U1",
            "blocked",
            by="blocked",
            block=Block("awaiting-operator", "F1"),
            at=T0 + timedelta(seconds=500),
        ),
        transition(P, "U1", "working", by="unblocked", at=T0 + timedelta(seconds=800)),
    )
    assert budgets.wait_by_reason(state.slices["S1"]) == {
        "awaiting-gate": 390.0,
        "awaiting-operator": 300.0,
    }
    [breach] = budgets.breaches(state)
    assert (breach.budget, breach.value, breach.limit) == ("wait", 690.0, 600.0)


def test_ratios_are_judged_at_the_close(signer: Signer) -> None:
    """Tokens per delivered unit and the cache hit rate breach only once the slice closes."""
    events = [
        registration(P, signer),
        *accepted(P, plan("S1", unit("U1"), budgets=LIMITS)),
        suite(signer, P, "U1", 5.0, [False, False, False]),
        UsageReport(project=P, actor=BUILDER, unit="U1", tokens_in=5000),
        transition(P, "U1", "failed", by="gave-up"),
    ]
    assert budgets.breaches(fold(*events)) == []
    closed = SliceClosed(project=P, actor=SYSTEM, slice="S1", boot=BootResult(outcome="pass"))
    found = {b.budget: b for b in budgets.breaches(fold(*events, closed))}
    assert set(found) == {"tokens_per_unit", "cache_hit_rate"}
    assert "no unit delivered" in found["tokens_per_unit"].detail
    assert found["cache_hit_rate"].value == 0.0


def test_a_raised_breach_is_not_raised_again(signer: Signer) -> None:
    """A standards budget-breach finding on the log marks that (slice, budget) as raised."""
    events = [
        registration(P, signer),
        *accepted(P, plan("S1", unit("U1"), budgets=LIMITS)),
        suite(signer, P, "U1", 90.0, [False]),
    ]
    [breach] = budgets.breaches(fold(*events))
    finding = breach_finding(P, breach, STANDARDS)
    assert finding.owner == "standards" and finding.producer == "standards"
    assert finding.cls == "budget-breach" and finding.unit is None
    assert budgets.breaches(fold(*events, finding, suite(signer, P, "U1", 120.0, [False]))) == []


@pytest.mark.parametrize(
    "role",
    [
        pytest.param("builder", id="builder"),
        pytest.param("operator", id="operator"),
        pytest.param("standards", id="a-role-named-standards"),
    ],
)
def test_a_breach_finding_not_published_by_the_system_suppresses_nothing(
    signer: Signer, role: str
) -> None:
    """Only the system's own budget-breach finding marks a breach raised: one published by
    anyone else, however it is labelled, leaves the breach to be raised."""
    events = [
        registration(P, signer),
        *accepted(P, plan("S1", unit("U1"), budgets=LIMITS)),
        suite(signer, P, "U1", 90.0, [False]),
    ]
    [breach] = budgets.breaches(fold(*events))
    claimed = msgspec.structs.replace(
        breach_finding(P, breach, STANDARDS), actor=Actor(role=role, principal="someone")
    )
    assert budgets.breaches(fold(*events, claimed)) == [breach]


def forged(signer: Signer, other: Signer) -> dict[str, GateSuiteCompleted]:
    """A slow suite in every way that is not a verified fact."""
    slow = suite(signer, P, "U1", 90.0, [False])
    return {
        "unsigned": suite(None, P, "U1", 90.0, [False]),
        "altered-after-signing": msgspec.structs.replace(
            suite(signer, P, "U1", 5.0, [False]), duration_s=90.0
        ),
        "unknown-runner": suite(other, P, "U1", 90.0, [False]),
        "not-the-system": signer.sign(msgspec.structs.replace(slow, actor=BUILDER, signature=None)),
    }


@pytest.mark.parametrize(
    "how", ["unsigned", "altered-after-signing", "unknown-runner", "not-the-system"]
)
def test_an_unverified_suite_is_not_measured(signer: Signer, tmp_path: Path, how: str) -> None:
    """A gate suite the gates projection would refuse (unsigned, forged, signed by a key
    nobody registered, or published by a role other than system) counts for no budget."""
    other = load_or_create(tmp_path / "other", "other")
    state = fold(
        registration(P, signer),
        *accepted(P, plan("S1", unit("U1"), budgets=LIMITS)),
        forged(signer, other)[how],
    )
    use = state.slices["S1"]
    assert (use.suites, use.suite_max_s, use.checks) == (0, 0.0, 0)
    assert budgets.breaches(state) == []


async def collect_findings(bus: Bus, project: str) -> list[FindingRaised]:
    return [
        r.event
        async for r in read(bus, subjects=[project_subjects(project)])
        if isinstance(r.event, FindingRaised)
    ]


async def settle(standards: Kernel, bus: Bus, event: Event) -> None:
    """Publish ``event`` and wait (bounded) until the daemon has folded it and acted."""
    ack = await bus.publish(event)
    await asyncio.wait_for(standards.wait_acted(ack.seq), 20)


async def test_breach_is_raised_once_to_standards_across_restarts(
    bus: Bus, project: str, signer: Signer
) -> None:
    """Slow suites, more slow suites and a daemon restart make exactly one finding, owned by
    standards and never by the unit whose suite tripped the budget."""
    await bus.publish(registration(project, signer))
    await bus.publish_many(accepted(project, plan("S1", unit("U1"), unit("U2"), budgets=LIMITS)))
    async with running(bus, Standards(projects=[project])) as first:
        await settle(first, bus, suite(signer, project, "U1", 75.0, [False]))
        [finding] = await collect_findings(bus, project)
        assert finding.producer == "standards" and finding.owner == "standards"
        assert finding.actor.role == "system"
        assert finding.cls == "budget-breach" and finding.unit is None and finding.slice == "S1"
        assert finding.target.budget == "gate_wall_clock"  # type: ignore[union-attr]
        assert finding.evidence["value"] == 75.0 and finding.evidence["limit"] == 60.0
        await settle(first, bus, suite(signer, project, "U2", 95.0, [False]))
    async with running(bus, Standards(projects=[project])) as second:
        await settle(second, bus, suite(signer, project, "U1", 99.0, [True]))
    findings = await collect_findings(bus, project)
    assert [f.id for f in findings] == [finding.id]
