"""Rounds through the reviewer daemon: the convergence verdicts, the ceiling, the ladder and
the halts, on real NATS with real repositories and a scripted reviewer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from reviewkit import (
    CRITERION,
    SYSTEM,
    GateSigner,
    GitRepo,
    Scripted,
    code_finding,
    config_of,
    count,
    daemon_violations,
    of,
    ready,
    running,
    setup_repo,
    verdict,
    wait_log,
)

from bus import Bus
from schemas import FindingRaised, FindingResolved, UnitTransitioned
from schemas.charter import Charter, CharterApproved, CharterCriterion
from schemas.reviews import ReviewRequested, RoundClosed, RungPromoted, VerdictAccepted
from schemas.slices import PlannedUnit, SlicePlan, SlicePlanAccepted
from workers.reviewer.daemon import Reviewer

A = code_finding("src/app.py", 2, criterion="C1")
B = code_finding("src/app.py", 2, criterion="C2")
NIT_X = code_finding("src/app.py", 2, severity="low", criterion="style-x")
NIT_Y = code_finding("src/app.py", 2, severity="low", criterion="style-y")


def body(expression: str) -> str:
    return f"def total(xs):\n    return {expression}\n\n\ndef other():\n    return 1\n"


HEADS = [
    "sum(xs)",
    "sum(list(xs))",
    "sum(x for x in xs)",
    "sum(xs, 0)",
    "0 + sum(xs)",
    "sum([*xs])",
]


async def rounds(
    bus: Bus,
    project: str,
    tmp_path: Path,
    agent: Scripted,
    steps: list[dict[str, Any]],
    *,
    until: Any,
    heads: list[Any] | None = None,
    before: list[Any] | None = None,
    **review: Any,
) -> tuple[GitRepo, list[Any]]:
    """Run the unit through ``len(steps)`` rounds: each round a new head, made ready once the
    previous round sent the unit back; stop waiting when ``until(events)``."""
    agent.plan(steps)
    table = {"command": agent.command, "roster": ["bob", "carol"], **review}
    repo = setup_repo(tmp_path, project, table)
    changes = heads or [{"src/app.py": body(h)} for h in HEADS[: len(steps)]]
    parent = repo.base
    commits = []
    base_toml = (repo.path / "loopbus.toml").read_text()
    for change in changes:
        if callable(change):  # an edit of the trunk's loopbus.toml
            change = {"loopbus.toml": change(base_toml)}
        parent = repo.commit(change, parent=parent)
        commits.append(parent)
    events: list[Any] = []
    for fact in before or ():  # facts on the log before the reviewer starts
        await bus.publish(fact)
    async with running(bus, Reviewer(config_of(repo))):
        await ready(bus, project, "U1", commits[0])
        for number, head in enumerate(commits[1:], start=1):
            events = await wait_log(bus, project, lambda ev, n=number: _settled(ev, n) or until(ev))
            if until(events):
                break
            await ready(bus, project, "U1", head, first=False)
        events = await wait_log(bus, project, until)
    assert daemon_violations(events) == []  # every transition the reviewer made is in the table
    return repo, events


def _settled(events: list[Any], closed: int) -> bool:
    """Round ``closed`` is closed and the unit has been sent back for the next one."""
    return (
        len(of(RoundClosed, events)) >= closed
        and len(of(UnitTransitioned, events, by="returned")) >= closed
    )


def stopped(events: list[Any]) -> bool:
    return bool(of(UnitTransitioned, events, state="blocked")) or bool(
        of(UnitTransitioned, events, state="failed")
    )


async def test_stalled_under_supervision_asks_the_operator_with_both_sets(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """The open blocking set did not shrink over ``stall`` rounds (1 here): the unit stops,
    BLOCKED awaiting-operator on a finding that states the verdict and the two rounds' sets."""
    agent = Scripted(agent_dir)
    _, events = await rounds(
        bus, project, tmp_path, agent,
        [verdict("reject", A, NIT_X), verdict("reject", A, NIT_Y)],
        until=stopped, oversight="supervised", stall=1,
    )  # fmt: skip
    first, second = of(RoundClosed, events)
    assert (first.convergence, second.convergence) == ("first", "stalled")
    assert (second.action, second.ended_by) == ("stopped", "progress-test")
    (blocked,) = of(UnitTransitioned, events, state="blocked")
    assert blocked.block is not None and blocked.block.reason == "awaiting-operator"
    (finding,) = of(FindingRaised, events, id=blocked.block.subject)
    assert finding.criterion == "convergence" and "stalled" in finding.message
    assert finding.evidence["previous"] == sorted(first.finding_keys)
    assert finding.evidence["current"] == sorted(second.finding_keys)
    assert finding.evidence["previous_blocking"] == finding.evidence["current_blocking"]
    assert "code:src/app.py:2-2|low|style-x" in finding.message
    assert "code:src/app.py:2-2|low|style-y" in finding.message


async def test_stalled_at_full_oversight_fails_the_unit(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """At oversight full a stop is a failure whose outcome names the progress test."""
    agent = Scripted(agent_dir)
    _, events = await rounds(
        bus, project, tmp_path, agent,
        [verdict("reject", A, NIT_X), verdict("reject", A, NIT_Y)],
        until=stopped, oversight="full", stall=1,
    )  # fmt: skip
    (failed,) = of(UnitTransitioned, events, state="failed")
    assert failed.outcome is not None and failed.outcome.ended_by == "progress-test"
    assert (failed.by, failed.cause) == ("halted", of(RoundClosed, events)[-1].id)
    assert of(FindingRaised, events, criterion="convergence") == []


async def test_thrashing_stops_the_unit(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """A finding fixed in round 2 is back in round 3: thrashing, and the unit stops."""
    agent = Scripted(agent_dir)
    _, events = await rounds(
        bus, project, tmp_path, agent,
        [verdict("reject", A), verdict("reject", B), verdict("reject", A)],
        until=stopped, oversight="full",
    )  # fmt: skip
    _first, second, third = of(RoundClosed, events)
    assert (second.convergence, second.action) == ("converging", "continue")
    assert (third.convergence, third.action, third.ended_by) == (
        "thrashing",
        "stopped",
        "progress-test",
    )
    assert "raised again after it was resolved" in third.why


async def test_a_different_finding_each_round_is_progress(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """Round 2 fixed what round 1 was told and met something new: converging, sent back on
    the same rung, and round 3 is reviewed (here approved). Rounds are compared on their
    heads' trees, recorded on each round."""
    agent = Scripted(agent_dir)
    _, events = await rounds(
        bus, project, tmp_path, agent,
        [verdict("reject", A), verdict("reject", B), verdict("approve")],
        until=count(RoundClosed, 1, action="approved"), oversight="full",
    )  # fmt: skip
    closed = of(RoundClosed, events)
    assert [(r.convergence, r.action, r.rung) for r in closed] == [
        ("first", "continue", 1),
        ("converging", "continue", 1),
        ("converging", "approved", 1),
    ]
    assert len({r.tree for r in closed}) == 3 and all(len(r.tree) == 40 for r in closed)
    assert of(RungPromoted, events) == [] and not stopped(events)


async def test_converging_rounds_continue_until_the_ceiling_ends_them(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """Fewer findings each round continue; the ceiling stops the unit and says it did."""
    agent = Scripted(agent_dir)
    _, events = await rounds(
        bus, project, tmp_path, agent,
        [verdict("reject", A, B, NIT_X), verdict("reject", A, B), verdict("reject", A)],
        until=stopped, oversight="full", ceiling=3,
    )  # fmt: skip
    closed = of(RoundClosed, events)
    assert [(r.convergence, r.action) for r in closed] == [
        ("first", "continue"),
        ("converging", "continue"),
        ("converging", "stopped"),
    ]
    assert closed[-1].ended_by == "ceiling"
    (failed,) = of(UnitTransitioned, events, state="failed")
    assert failed.outcome is not None and failed.outcome.ended_by == "ceiling"


async def test_identical_signature_promotes_the_rung_and_the_unit_goes_on(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """The same findings on a new diff climb a rung; the unit is sent back, not stopped,
    and the next round runs (and here passes) on rung 2."""
    agent = Scripted(agent_dir)
    _, events = await rounds(
        bus, project, tmp_path, agent,
        [verdict("reject", A), verdict("reject", A), verdict("approve")],
        until=count(RoundClosed, 1, action="approved"),
    )  # fmt: skip
    (promoted,) = of(RungPromoted, events)
    assert (promoted.from_rung, promoted.to_rung, promoted.tactic) == (1, 2, "diagnose")
    assert "identical failure signature" in promoted.why
    closed = of(RoundClosed, events)
    assert [(r.action, r.rung) for r in closed] == [
        ("continue", 1),
        ("promoted", 1),
        ("approved", 2),
    ]
    assert not stopped(events)


async def test_identical_tree_promotes_the_rung(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """A resubmission with the same tree promotes even though the findings changed."""
    agent = Scripted(agent_dir)
    same = {"src/app.py": body("sum(xs)")}
    _, events = await rounds(
        bus, project, tmp_path, agent,
        [verdict("reject", A), verdict("reject", B)],
        heads=[same, dict(same)],  # the second head: a new commit, the very same tree
        until=count(RungPromoted),
    )  # fmt: skip
    (promoted,) = of(RungPromoted, events)
    assert "identical tree" in promoted.why
    first, second = of(RoundClosed, events)
    assert first.head != second.head and first.tree == second.tree != ""
    assert second.convergence == "converging" and second.action == "promoted"


async def test_repeating_the_same_failure_spends_the_ladder_then_halts(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """Rungs 2, 3 and 4 are each spent by a repeat; the repeat on rung 4 halts the unit."""
    agent = Scripted(agent_dir)
    _, events = await rounds(
        bus, project, tmp_path, agent, [verdict("reject", A)] * 5, until=stopped
    )
    assert [(p.from_rung, p.to_rung) for p in of(RungPromoted, events)] == [
        (1, 2),
        (2, 3),
        (3, 4),
        (4, 5),
    ]
    (failed,) = of(UnitTransitioned, events, state="failed")
    assert failed.outcome is not None and failed.outcome.ended_by == "halted"
    assert "ladder spent" in failed.outcome.summary


SECRET = {"src/settings.py": "AWS_KEY = 'AKIAIOSFODNN7EXAMPLE'\n"}
CRITERIA_EDIT = {"tests/test_criteria.py": "def test_total():\n    assert True\n"}


@pytest.mark.parametrize(
    ("change", "criterion"),
    [
        pytest.param(SECRET, "no-secrets-in-diff", id="secret-in-diff"),
        pytest.param(CRITERIA_EDIT, "frozen-artifact", id="edits-criteria-test"),
        pytest.param(
            lambda toml: toml.replace("pytest -q", "pytest -q -x"),
            "frozen-artifact",
            id="edits-gate-config",
        ),
    ],
)
async def test_halts_before_any_review(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path, change: Any, criterion: str
) -> None:
    """A secret or a frozen-artifact edit skips the ladder: no reviewer runs, the unit lands
    on rung 5 and FAILS with ended_by halted, on a critical finding naming why."""
    agent = Scripted(agent_dir)
    _, events = await rounds(
        bus, project, tmp_path, agent, [verdict("approve")], heads=[change], until=stopped
    )
    assert agent.calls() == [] and of(ReviewRequested, events) == []
    (halt,) = of(FindingRaised, events, criterion=criterion)
    assert halt.severity == "critical"
    (closed,) = of(RoundClosed, events)
    assert (closed.action, closed.ended_by, closed.finding) == ("halted", "halted", halt.id)
    (promoted,) = of(RungPromoted, events)
    assert (promoted.from_rung, promoted.to_rung) == (1, 5)
    (failed,) = of(UnitTransitioned, events, state="failed")
    assert failed.outcome is not None and failed.outcome.ended_by == "halted"


CHARTER_TEST = "tests/test_goal.py::test_goal"
CHARTER_EDIT = {"tests/test_goal.py": "def test_goal():\n    assert True\n"}


def charter_facts(project: str, *, skeleton: bool) -> list[Any]:
    """A charter in force whose one criterion is CHARTER_TEST and, when ``skeleton``, the
    unit's slice (S1) accepted as its skeleton."""
    charter = Charter(
        id="C1",
        title="goal",
        criteria=(CharterCriterion(id="goal", text="the goal holds", test=CHARTER_TEST),),
    )
    facts: list[Any] = [CharterApproved(project=project, actor=SYSTEM, charter=charter)]
    if skeleton:
        plan = SlicePlan(slice="S1", skeleton=True, units=[PlannedUnit(id="U1")])
        accepted = SlicePlanAccepted(project=project, actor=SYSTEM, plan=plan, cause=facts[0].id)
        facts.append(accepted)
    return facts


async def test_editing_a_charter_test_halts_before_any_review(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """The charter's test files are frozen artifacts for the reviewer as for the gate
    runner: a unit editing one halts on a critical finding, with no review spent."""
    agent = Scripted(agent_dir)
    _, events = await rounds(
        bus, project, tmp_path, agent, [verdict("approve")], heads=[CHARTER_EDIT],
        before=charter_facts(project, skeleton=False), until=stopped,
    )  # fmt: skip
    assert agent.calls() == []
    (halt,) = of(FindingRaised, events, criterion="frozen-artifact")
    assert halt.target.path == "tests/test_goal.py"  # type: ignore[union-attr]


async def test_a_skeleton_unit_may_write_the_charter_test(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """A skeleton slice's unit writes the charter's tests (the operator reviews them before
    anything is built): its head is reviewed, not halted."""
    agent = Scripted(agent_dir)
    _, events = await rounds(
        bus, project, tmp_path, agent, [verdict("approve")], heads=[CHARTER_EDIT],
        before=charter_facts(project, skeleton=True), until=count(RoundClosed),
    )  # fmt: skip
    assert of(VerdictAccepted, events)[0].decision == "approve"
    assert of(FindingRaised, events, criterion="frozen-artifact") == []


async def test_clearing_its_own_pending_marker_is_not_a_frozen_edit(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """The one edit to loopbus.toml a unit's contract requires is reviewed normally."""
    agent = Scripted(agent_dir)
    _, events = await rounds(
        bus, project, tmp_path, agent, [verdict("approve")],
        heads=[lambda toml: toml.replace(f'pending = ["{CRITERION}"]', "pending = []")],
        until=count(RoundClosed),
    )  # fmt: skip
    assert of(VerdictAccepted, events)[0].decision == "approve"
    assert not stopped(events)


async def test_a_high_security_finding_halts_at_once(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """A reviewer's high security finding on the unit's lines halts it in round one."""
    agent = Scripted(agent_dir)
    security = code_finding("src/app.py", 2, severity="high", criterion="security")
    _, events = await rounds(
        bus, project, tmp_path, agent, [verdict("reject", security)], until=stopped
    )
    (closed,) = of(RoundClosed, events)
    assert (closed.action, closed.ended_by) == ("halted", "halted")
    (raised,) = of(FindingRaised, events, criterion="security")
    assert closed.finding == raised.id
    (failed,) = of(UnitTransitioned, events, state="failed")
    assert failed.outcome is not None and failed.outcome.ended_by == "halted"


async def test_a_security_finding_outside_the_diff_does_not_halt(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """Subtraction comes first: a security finding about code the unit did not write is
    subtracted, and the unit is not punished for it."""
    agent = Scripted(agent_dir)
    elsewhere = code_finding("src/app.py", 5, severity="critical", criterion="security")
    _, events = await rounds(
        bus, project, tmp_path, agent, [verdict("reject", elsewhere)],
        until=count(RoundClosed),
    )  # fmt: skip
    (closed,) = of(RoundClosed, events)
    assert (closed.action, closed.passed) == ("approved", True)
    (accepted,) = of(VerdictAccepted, events)
    assert (accepted.claimed, accepted.decision, len(accepted.subtracted)) == (
        "reject",
        "approve",
        1,
    )


async def test_red_gate_suites_are_rounds_and_repeat_to_promote(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """A red suite on the unit's head is a gate round: findings outside the diff are
    resolved as subtracted, the failing check is in the signature, and the same failure
    again promotes the rung."""
    agent = Scripted(agent_dir)
    table = {"command": agent.command, "roster": ["bob"]}
    repo = setup_repo(tmp_path, project, table)
    head1 = repo.commit({"src/app.py": body("sum(xs)")}, parent=repo.base)
    head2 = repo.commit({"src/app.py": body("sum(list(xs))")}, parent=head1)
    signer = GateSigner()
    await signer.register(bus, project)
    await ready(bus, project, "U1", head1, gates=False)
    async with running(bus, Reviewer(config_of(repo))):
        for number, head in enumerate((head1, head2), start=1):
            inside = gate_finding(project, "src/app.py", 2)
            outside = gate_finding(project, "src/app.py", 5)
            result = signer.result(project, "tests", head, "fail", [inside.id, outside.id])
            await bus.publish_atomic([inside, outside, result])
            await bus.publish(signer.suite(project, "U1", head, [result]))
            events = await wait_log(bus, project, count(RoundClosed, number, source="gate"))
        events = await wait_log(bus, project, count(RungPromoted))
    assert of(ReviewRequested, events) == []  # a red unit is not ready: nothing to review
    first, second = of(RoundClosed, events, source="gate")
    assert first.failing_checks == ["tests"]
    assert first.finding_keys == ["code:src/app.py:2-2|high|tests"]
    assert (second.action, second.rung) == ("promoted", 1)
    assert of(RungPromoted, events)[0].to_rung == 2
    resolved = of(FindingResolved, events)
    assert len(resolved) == 2 and all(r.why.startswith("subtracted:") for r in resolved)


async def test_a_red_gate_then_an_unrelated_rejection_is_sent_back_not_stopped(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """Round 1 is red at its gate; round 2 (a new head, its gates green) is rejected for
    something unrelated. Each round fixed what it was told: converging, the unit is sent
    back on rung 1 — at oversight full, where a stop would fail it."""
    agent = Scripted(agent_dir)
    agent.plan([verdict("reject", A)])
    table = {"command": agent.command, "roster": ["bob"], "oversight": "full"}
    repo = setup_repo(tmp_path, project, table)
    head1 = repo.commit({"src/app.py": body("sum(xs)")}, parent=repo.base)
    head2 = repo.commit({"src/app.py": body("sum(list(xs))")}, parent=head1)
    signer = GateSigner()
    await signer.register(bus, project)
    await ready(bus, project, "U1", head1, gates=False)
    async with running(bus, Reviewer(config_of(repo))):
        result = signer.result(project, "tests", head1, "fail", [])
        await bus.publish(result)
        await bus.publish(signer.suite(project, "U1", head1, [result]))
        await wait_log(bus, project, count(RoundClosed, 1, source="gate"))
        await ready(bus, project, "U1", head2, first=False)
        events = await wait_log(bus, project, count(UnitTransitioned, 1, by="returned"))
    gate, review = of(RoundClosed, events)
    assert (gate.source, gate.finding_keys) == ("gate", ["check:tests|high|gate-fail"])
    assert (review.source, review.convergence, review.action, review.rung) == (
        "review",
        "converging",
        "continue",
        1,
    )
    assert of(RungPromoted, events) == [] and not stopped(events)


def gate_finding(project: str, path: str, line: int) -> FindingRaised:
    from reviewkit import SYSTEM

    from schemas.targets import CodeTarget

    return FindingRaised(
        project=project,
        actor=SYSTEM,
        producer="gate_runner",
        target=CodeTarget(path=path, start=line, end=line),
        severity="high",
        criterion="tests",
        message="assertion failed",
        unit="U1",
    )


async def test_a_suite_failed_by_a_test_rewritten_finding_is_a_blocking_gate_round(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """Every check passed, but the runner raised a test-rewritten finding beside them (the
    unit's conftest changed what a test says) and failed the suite: the gate round carries
    that finding's key as blocking, as it would a red check's."""
    import msgspec
    from reviewkit import SYSTEM

    from schemas.targets import CodeTarget

    agent = Scripted(agent_dir)
    repo = setup_repo(tmp_path, project, {"command": agent.command, "roster": ["bob"]})
    head = repo.commit({"src/app.py": body("sum(xs)")}, parent=repo.base)
    signer = GateSigner()
    await signer.register(bus, project)
    await ready(bus, project, "U1", head, gates=False)
    async with running(bus, Reviewer(config_of(repo))):
        rewrite = FindingRaised(
            project=project,
            actor=SYSTEM,
            producer="gate_runner",
            cls="test-rewritten",
            target=CodeTarget(path="tests/conftest.py", start=1, end=1),
            severity="high",
            criterion="tests",
            message="changing tests/conftest.py changed what the tests say",
            evidence={"commit": head},
            unit="U1",
        )
        result = signer.result(project, "tests", head, "pass", [])
        suite = signer.suite(project, "U1", head, [result])
        failed = signer.sign(msgspec.structs.replace(suite, outcome="fail"))
        await bus.publish(result)
        await bus.publish_atomic([rewrite, failed])
        events = await wait_log(bus, project, count(RoundClosed, 1, source="gate"))
    [closed] = of(RoundClosed, events, source="gate")
    assert closed.finding_keys == ["code:tests/conftest.py:1-1|high|tests"]
    assert closed.blocking_keys == closed.finding_keys and not closed.passed


async def test_review_findings_not_raised_again_are_resolved(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """A finding the next round no longer raises is resolved, naming the round that dropped
    it; one raised again stays open (one finding, seen twice)."""
    agent = Scripted(agent_dir)
    _, events = await rounds(
        bus, project, tmp_path, agent,
        [verdict("reject", A, NIT_X), verdict("reject", A)],
        until=count(RoundClosed, 2),
    )  # fmt: skip
    first = of(VerdictAccepted, events)[0]
    raised = [f for f in of(FindingRaised, events) if f.id in first.raised]
    (nit,) = [f for f in raised if f.severity == "low"]
    (resolved,) = of(FindingResolved, events)
    assert resolved.finding == nit.id and resolved.why.startswith("not raised again in round 2")


async def test_a_failing_criterion_test_is_never_subtracted(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """A failure in the unit's own criteria file is its contract, in a file it may not edit:
    kept (open and in the round's keys) although it is outside the unit's diff."""
    agent = Scripted(agent_dir)
    repo = setup_repo(tmp_path, project, {"command": agent.command, "roster": ["bob"]})
    head = repo.commit({"src/app.py": body("sum(xs)")}, parent=repo.base)
    signer = GateSigner()
    await signer.register(bus, project)
    await ready(bus, project, "U1", head, gates=False)
    async with running(bus, Reviewer(config_of(repo))):
        criterion = gate_finding(project, "tests/test_criteria.py", 4)
        result = signer.result(project, "tests", head, "fail", [criterion.id])
        await bus.publish_atomic([criterion, result])
        await bus.publish(signer.suite(project, "U1", head, [result]))
        events = await wait_log(bus, project, count(RoundClosed, 1, source="gate"))
    [closed] = of(RoundClosed, events, source="gate")
    assert closed.finding_keys == ["code:tests/test_criteria.py:4-4|high|tests"]
    assert of(FindingResolved, events) == []


async def test_gate_findings_of_earlier_heads_resolve_once_gates_pass(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """A gate finding an earlier head raised is resolved when a later head of the unit has
    passed its gates and is reviewed: nothing stays open on a unit that moved past it."""
    earlier = gate_finding(project, "src/app.py", 2)
    await bus.publish(earlier)
    agent = Scripted(agent_dir)
    _, events = await rounds(
        bus, project, tmp_path, agent, [verdict("approve")], until=count(RoundClosed, 1)
    )
    [resolved] = of(FindingResolved, events)
    assert resolved.finding == earlier.id and "gates passed" in resolved.why
