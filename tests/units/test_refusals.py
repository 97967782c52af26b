"""A claim the table or the reasons do not allow is refused with a finding that says why."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
from unitkit import (
    answered,
    claim,
    plan,
    transitions,
    units_daemon,
    wait_log,
)

from bus import Bus
from schemas import BLOCK_REASONS, Actor, FindingRaised, parse_target
from workers.gates.declared import DeclaredChecks

NO_FINDING = "01JZZZZZZZZZZZZZZZZZZZZZZZ"
CHECKS = {"tests": "project", "lint": "profile:cli@1"}


async def _question(bus: Bus, project: str) -> str:
    """An open operator finding a unit can wait on; its id."""
    finding = FindingRaised(
        project=project,
        actor=Actor(role="builder", principal="b"),
        producer="builder",
        target=parse_target("plan:S1"),
        severity="medium",
        cls="blocked-by-fact",
        message="the library cannot stream; which way?",
        owner="operator",
    )
    await bus.publish(finding)
    return finding.id


REFUSED = [
    pytest.param("awaiting-operator", "", "block-subject-missing", "(a finding id)", id="op-none"),
    pytest.param(
        "awaiting-operator",
        NO_FINDING,
        "block-subject-unresolved",
        "not the id of an open finding",
        id="op-unknown-finding",
    ),
    pytest.param(
        "awaiting-dependency",
        "",
        "block-subject-missing",
        "(a sibling unit id in the same slice)",
        id="dep-none",
    ),
    pytest.param(
        "awaiting-dependency",
        "U7",
        "block-subject-unresolved",
        "is not a planned unit",
        id="dep-unplanned",
    ),
    pytest.param(
        "awaiting-dependency",
        "U9",
        "block-subject-unresolved",
        "is in slice S2, not in this unit's slice S1",
        id="dep-other-slice",
    ),
    pytest.param(
        "awaiting-dependency",
        "U1",
        "block-subject-unresolved",
        "is this unit itself",
        id="dep-itself",
    ),
    pytest.param("awaiting-gate", "", "block-subject-missing", "(a check id)", id="gate-none"),
    pytest.param(
        "awaiting-gate",
        "nosuch",
        "block-subject-unresolved",
        "is not a check of this project (known: lint, tests)",
        id="gate-unknown-check",
    ),
    pytest.param(
        "awaiting-capacity", "", "block-subject-missing", "(a budget name)", id="capacity-none"
    ),
    pytest.param(
        "awaiting-capacity",
        "coffee",
        "block-subject-unresolved",
        "is not a budget",
        id="capacity-unknown-budget",
    ),
    pytest.param(
        "awaiting-godot",
        "U2",
        "block-reason-unknown",
        ", ".join(BLOCK_REASONS),
        id="unknown-reason",
    ),
]


@pytest.mark.parametrize(("reason", "subject", "code", "says"), REFUSED)
async def test_block_without_a_resolvable_subject_is_refused_with_a_finding(
    bus: Bus, nats_url: str, project: str, reason: str, subject: str, code: str, says: str
) -> None:
    """A block without a subject, or with one that does not resolve, is refused by a finding."""
    await plan(bus, project, {"S1": ["U1", "U2"], "S2": ["U9"]})
    await _question(bus, project)
    async with units_daemon(nats_url, project, checks=DeclaredChecks(project, CHECKS)):
        started = claim(project, "U1", "started")
        await bus.publish(started)
        await wait_log(bus, project, answered(started))
        blocked = claim(project, "U1", "blocked", reason=reason, subject=subject)
        await bus.publish(blocked)
        events = await wait_log(bus, project, answered(blocked))
    refusals = [e for e in events if isinstance(e, FindingRaised) and e.cls == "refused-transition"]
    assert len(refusals) == 1
    refusal = refusals[0]
    assert refusal.criterion == code
    assert says in refusal.message
    assert refusal.evidence["report"] == blocked.id
    assert (refusal.producer, refusal.owner, refusal.unit) == ("builder", "builder:U1", "U1")
    assert refusal.actor.role == "system"
    assert [t.state for t in transitions(events, "U1")] == ["working"]


RESOLVED = [
    pytest.param("awaiting-operator", None, id="operator-on-open-finding"),
    pytest.param("awaiting-dependency", "U2", id="dependency-on-sibling"),
    pytest.param("awaiting-gate", "lint", id="gate-on-known-check"),
    pytest.param("awaiting-capacity", "tokens_per_unit", id="capacity-on-budget"),
]


@pytest.mark.parametrize(("reason", "subject"), RESOLVED)
async def test_block_with_a_resolvable_subject_moves_the_unit_and_back(
    bus: Bus, nats_url: str, project: str, reason: str, subject: str | None
) -> None:
    """Each reason with a resolvable subject blocks the unit; its wait is counted on unblock."""
    await plan(bus, project, {"S1": ["U1", "U2"]})
    question = await _question(bus, project)
    subject = subject or question
    async with units_daemon(nats_url, project, checks=DeclaredChecks(project, CHECKS)):
        reports = [
            claim(project, "U1", "started"),
            claim(project, "U1", "blocked", reason=reason, subject=subject),
            claim(project, "U1", "unblocked"),
        ]
        for report in reports:
            await bus.publish(report)
        events = await wait_log(bus, project, answered(reports[-1]))
    moved = transitions(events, "U1")
    assert [(t.prior, t.state, t.by) for t in moved] == [
        (None, "working", "started"),
        ("working", "blocked", "blocked"),
        ("blocked", "working", "unblocked"),
    ]
    assert moved[1].block is not None and (moved[1].block.reason, moved[1].block.subject) == (
        reason,
        subject,
    )
    from projections import units as units_fold

    view = units_fold.FOLD.fold(events).units["U1"]
    assert view.waited_s[reason] == pytest.approx((moved[2].at - moved[1].at).total_seconds())


async def test_claims_the_table_does_not_allow_are_refused(
    bus: Bus, nats_url: str, project: str
) -> None:
    """Claims out of turn are each refused with a finding naming why, and nothing moves."""
    await plan(bus, project, {"S1": ["U1"]})
    reviewer = Actor(role="reviewer", principal="r")
    operator = Actor(role="operator", principal="ops")
    cases = [
        (claim(project, "U5", "started"), "unit-not-planned"),
        (claim(project, "U1", "commit", sha="a" * 40), "not-started"),
        (claim(project, "U1", "started", actor=reviewer), "claimant-role"),
        (claim(project, "U1", "started"), None),
        (claim(project, "U1", "started"), "already-started"),
        (claim(project, "U1", "unblocked"), "not-blocked"),
        (claim(project, "U1", "commit", sha="abc123"), "commit-sha"),
        (claim(project, "U1", "commit", sha="a" * 40 + "\n"), "commit-sha"),
        (claim(project, "U1", "gave-up", why="  "), "gave-up-without-why"),
        (claim(project, "U1", "gave-up", why="the API cannot do it", actor=operator), None),
        (claim(project, "U1", "started", actor=operator), "terminal"),
    ]
    async with units_daemon(nats_url, project):
        for report, _code in cases:
            await bus.publish(report)
            events = await wait_log(bus, project, answered(report))
    for report, code in cases:
        refusals = [
            e
            for e in events
            if isinstance(e, FindingRaised) and e.evidence.get("report") == report.id
        ]
        if code is None:
            assert refusals == [], refusals
        else:
            assert [r.criterion for r in refusals] == [code]
    operator_refusal = next(
        e for e in events if isinstance(e, FindingRaised) and e.criterion == "terminal"
    )
    assert (operator_refusal.producer, operator_refusal.owner) == ("operator", "operator")
    failed = transitions(events, "U1")[-1]
    assert failed.state == "failed" and failed.outcome is not None
    assert (failed.outcome.ended_by, failed.outcome.summary) == ("gave-up", "the API cannot do it")


def _cli(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopbus.cli", "report", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ | {"LOOPBUS_NATS_URL": url},
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        pytest.param(
            ["--reason", "awaiting-godot", "--subject", "U2"],
            "--reason 'awaiting-godot' is not one of: " + ", ".join(BLOCK_REASONS),
            id="unknown-reason",
        ),
        pytest.param(
            ["--subject", "U2"],
            "--reason is required: one of " + ", ".join(BLOCK_REASONS),
            id="no-reason",
        ),
        pytest.param(
            ["--reason", "awaiting-dependency"],
            "--subject is required: awaiting-dependency names a sibling unit id in the same slice",
            id="no-subject",
        ),
        pytest.param(
            ["--reason", "awaiting-capacity", "--subject", "coffee"],
            "--subject 'coffee' is not a budget",
            id="capacity-not-a-budget",
        ),
    ],
)
def test_cli_refuses_a_bad_reason_or_subject_in_one_line(
    nats_url: str, args: list[str], says: str
) -> None:
    """`report blocked` refuses a bad reason or subject in one line naming the options."""
    done = _cli("blocked", "--project", "p", "--unit", "U1", *args, url=nats_url)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("loopbus: error: ")
    assert says in lines[0]


async def test_cli_wait_prints_the_transition_or_the_refusal(
    bus: Bus, nats_url: str, project: str
) -> None:
    """`--wait` prints the unit's transition (exit 0), or the refusal as one line (exit 1)."""
    await plan(bus, project, {"S1": ["U1", "U2"]})
    base = ["--project", project, "--unit", "U1", "--wait", "20"]
    async with units_daemon(nats_url, project):
        started = await asyncio.to_thread(_cli, "started", *base, url=nats_url)
        refused = await asyncio.to_thread(
            _cli,
            "blocked",
            *base,
            "--reason",
            "awaiting-dependency",
            "--subject",
            "U3",
            url=nats_url,
        )
        blocked = await asyncio.to_thread(
            _cli,
            "blocked",
            *base,
            "--reason",
            "awaiting-dependency",
            "--subject",
            "U2",
            url=nats_url,
        )
    assert started.returncode == 0, started.stderr
    assert "unit U1: planned -> working (by started)" in started.stdout
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        "loopbus: error: blocked report refused: awaiting-dependency names 'U3', which is not "
        "a planned unit"
    ]
    assert blocked.returncode == 0, blocked.stderr
    assert "unit U1: working -> blocked awaiting-dependency on U2 (by blocked)" in blocked.stdout


async def test_a_unit_of_a_dispatched_slice_starts_only_once_dispatched(
    bus: Bus, nats_url: str, project: str
) -> None:
    """In a dispatcher's slice, `started` is refused until the unit has been dispatched."""
    from schemas.slices import PlannedUnit, SlicePlan, SlicePlanAccepted, UnitDispatched

    system = Actor(role="system", principal="test-dispatcher")
    accepted = SlicePlanAccepted(
        project=project,
        actor=system,
        plan=SlicePlan(slice="S1", units=[PlannedUnit(id="U1")]),
        cause=NO_FINDING,
    )
    await bus.publish(accepted)
    await plan(bus, project, {"S1": ["U1"]})
    early, late = claim(project, "U1", "started"), claim(project, "U1", "started")
    async with units_daemon(nats_url, project):
        await bus.publish(early)
        await wait_log(bus, project, answered(early))
        dispatched = UnitDispatched(
            project=project, actor=system, slice="S1", unit="U1", wave=0, sub_wave=0, position=0
        )
        await bus.publish(dispatched)
        await bus.publish(late)
        events = await wait_log(bus, project, answered(late))
    refusal = next(e for e in events if getattr(e, "evidence", {}).get("report") == early.id)
    assert refusal.criterion == "not-dispatched"  # type: ignore[union-attr]
    assert [(t.state, t.cause) for t in transitions(events, "U1")] == [("working", late.id)]
