"""Which gate findings the merger tracks and when a trunk run vouches for them: the pure
part of the ``merges`` fold (:mod:`projections.gate_findings`)."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from projections import gate_findings, merges
from projections.gate_findings import WAITING_CAP, GateFindings
from schemas import Actor, Event, FindingRaised, FindingResolved, parse_target
from schemas.gates import SUITE_CRITERION
from schemas.lifecycle import FindingDismissed
from schemas.merges import CandidateTested, CheckVerdict

P = "shop"
SYSTEM = Actor(role="system", principal="tests")
RED, GREEN, LATER = "1" * 40, "2" * 40, "3" * 40


def finding(commit: str, check: str = "tests", unit: str | None = None) -> FindingRaised:
    return FindingRaised(
        project=P,
        actor=SYSTEM,
        producer="gate_runner",
        target=parse_target("code:tests/test_a.py:3"),
        severity="high",
        criterion=check,
        message="test_a failed",
        evidence={"commit": commit, "check": check},
        unit=unit,
    )


def run_on(commit: str, stage: str = "trunk", **outcomes: str) -> CandidateTested:
    """The merger's verdict on ``commit``: each check's outcome (none: the suite errored)."""
    checks = [CheckVerdict(check=c, outcome=o, cached=False) for c, o in outcomes.items()]
    worst = "pass" if all(o == "pass" for o in outcomes.values()) else "fail"
    return CandidateTested(
        project=P,
        actor=SYSTEM,
        stage=stage,
        candidate=commit,
        tree="4" * 40,
        outcome=worst if checks else "error",
        checks=checks,
    )


def fold(*events: Event) -> GateFindings:
    """The merges fold as every daemon runs it (forgeries never reach it)."""
    return merges.FOLD.fold(events).gate_findings


def test_a_red_check_s_finding_is_tracked_whether_it_comes_before_or_after_the_verdict() -> None:
    before, after = finding(RED), finding(RED)
    state = fold(before, run_on(RED, tests="fail"), after)
    assert sorted(state.red) == sorted([before.id, after.id]) and state.waiting == {}


def test_a_passing_check_s_warning_is_not_tracked_and_a_units_finding_never_is() -> None:
    warning, units = finding(RED, "lint"), finding(RED, unit="U1")
    state = fold(warning, units, run_on(RED, "candidate", tests="fail", lint="pass"))
    assert state.red == {} and state.waiting == {}


def held_after(*events: Event) -> dict[str, str]:
    """What the last event, a trunk run, vouches for after folding them all."""
    last = events[-1]
    assert isinstance(last, CandidateTested) and last.stage == "trunk"
    return gate_findings.no_longer_held(fold(*events), last.checks)


def test_a_later_pass_of_the_check_vouches_and_another_check_does_not() -> None:
    tests_red, lint_red = finding(RED), finding(RED, "lint")
    red_run = run_on(RED, tests="fail", lint="fail")
    assert held_after(tests_red, lint_red, red_run) == {}  # its own run vouches for nothing
    later = run_on(LATER, tests="pass", lint="fail")
    assert held_after(tests_red, lint_red, red_run, later) == {tests_red.id: "tests"}
    recheck = run_on(RED, tests="pass", lint="pass")  # the same commit, run again
    assert held_after(tests_red, lint_red, red_run, recheck) == {
        tests_red.id: "tests",
        lint_red.id: "lint",
    }


def test_a_trunk_run_before_a_red_candidate_does_not_vouch_for_its_findings() -> None:
    """Trunk was green, then a candidate went red: only the next trunk run can say."""
    trunk_green = run_on(GREEN, tests="pass")
    failed = finding(RED)
    candidate = run_on(RED, "candidate", tests="fail")
    state = fold(trunk_green, failed, candidate)
    assert list(state.red) == [failed.id]
    assert gate_findings.no_longer_held(state, trunk_green.checks) == {}
    assert held_after(trunk_green, failed, candidate, run_on(LATER, tests="pass")) == {
        failed.id: "tests"
    }


def test_a_suite_that_could_not_run_is_vouched_for_by_a_run_that_ran_checks() -> None:
    broken = finding(RED, SUITE_CRITERION)
    errored = run_on(RED)  # no checks: the suite errored
    assert list(fold(broken, errored).red) == [broken.id]
    assert held_after(broken, errored, run_on(GREEN)) == {}
    assert held_after(broken, errored, run_on(GREEN, tests="fail")) == {broken.id: SUITE_CRITERION}


def test_a_dismissed_or_resolved_finding_is_no_longer_tracked() -> None:
    red, other = finding(RED), finding(RED)
    dismissed = FindingDismissed(
        project=P,
        actor=SYSTEM,
        finding=red.id,
        reason="wont-fix",
        why="known",
        claim=other.id,
        by="operator:olive",
    )
    resolved = FindingResolved(project=P, actor=SYSTEM, finding=other.id, why="fixed")
    assert fold(red, other, run_on(RED, tests="fail"), dismissed, resolved).red == {}


def test_an_operator_run_on_a_commit_the_merger_never_judges_waits_and_is_capped() -> None:
    strays = [finding(f"{i:040x}") for i in range(WAITING_CAP + 5)]
    state = fold(*strays, run_on(GREEN, tests="pass"))
    assert state.red == {} and len(state.waiting) == WAITING_CAP
    assert strays[0].id not in state.waiting and strays[-1].id in state.waiting


def test_a_forged_gate_finding_is_not_applied() -> None:
    forged = msgspec.structs.replace(finding(RED), actor=Actor(role="builder", principal="b"))
    assert fold(forged, run_on(RED, tests="fail")).red == {}


@st.composite
def gate_histories(draw: st.DrawFn) -> list[Event]:
    """Gate findings, verdicts and resolutions on a few commits, in any order."""
    commits, checks = [RED, GREEN, LATER], ["tests", "lint", SUITE_CRITERION]
    events: list[Event] = []
    raised: list[str] = []
    for _ in range(draw(st.integers(0, 30))):
        choice = draw(st.integers(0, 2))
        if choice == 0:
            event: Event = finding(draw(st.sampled_from(commits)), draw(st.sampled_from(checks)))
            raised.append(event.id)
        elif choice == 1:
            outcomes = draw(
                st.dictionaries(st.sampled_from(checks[:2]), st.sampled_from(["pass", "fail"]))
            )
            event = run_on(draw(st.sampled_from(commits)), **outcomes)
        elif raised:
            event = FindingResolved(
                project=P, actor=SYSTEM, finding=draw(st.sampled_from(raised)), why="done"
            )
        else:
            continue
        events.append(event)
    return events


@settings(max_examples=300, deadline=None)
@given(events=gate_histories())
def test_only_open_findings_of_red_checks_are_tracked(events: list[Event]) -> None:
    """Whatever the order: a tracked finding was raised, is not closed, and its check was
    red in a verdict on its commit; nothing is both tracked and waiting."""
    state = fold(*events)
    raised = {e.id: e for e in events if isinstance(e, FindingRaised)}
    closed = {e.finding for e in events if isinstance(e, FindingResolved)}
    red_on: dict[str, set[str]] = {}
    for event in events:
        if isinstance(event, CandidateTested):
            red = {v.check for v in event.checks if v.outcome != "pass"}
            red |= {SUITE_CRITERION} if event.outcome != "pass" else set()
            red_on.setdefault(event.candidate, set()).update(red)
    for finding_id, where in state.red.items():
        assert finding_id in raised and finding_id not in closed
        assert where.check in red_on.get(where.commit, set())
        assert 0 < where.run <= state.runs
    assert not set(state.red) & set(state.waiting)
    assert not set(state.waiting) & closed
