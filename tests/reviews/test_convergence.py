"""Convergence, pure: the three verdicts, the ceiling and the ladder, checked against a
direct implementation of the definitions on generated round sequences."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loopbus.projections import convergence as conv
from loopbus.schemas import Actor, Outcome, UnitTransitioned
from loopbus.schemas.reviews import RoundClosed, RungPromoted

SYSTEM = Actor(role="system", principal="tests")


def facts(
    keys: dict[str, bool], diff: str = "d", passed: bool = False, checks: tuple[str, ...] = ()
) -> conv.RoundFacts:
    """A round from {key: blocking}."""
    return conv.RoundFacts(
        keys=frozenset(keys),
        blocking=frozenset(k for k, b in keys.items() if b),
        signature=conv.failure_signature(checks, keys),
        diff_digest=diff,
        passed=passed,
    )


@pytest.mark.parametrize(
    ("before", "after", "verdict"),
    [
        pytest.param({"A": True, "B": False}, {"A": True}, "converging", id="fewer-same-blocking"),
        pytest.param({"A": True, "B": True}, {"B": True}, "converging", id="fixed-a-blocker"),
        pytest.param(
            {"A": True, "x": False}, {"A": True, "y": False}, "stalled", id="same-blocking"
        ),
        pytest.param({"A": True}, {"A": True}, "stalled", id="identical"),
        pytest.param({"A": True}, {"B": True}, "thrashing", id="same-size-other-set"),
        pytest.param({"A": True, "B": True}, {"C": True}, "thrashing", id="fewer-but-new-blocker"),
        pytest.param({"A": True}, {"A": True, "B": True}, "thrashing", id="grew"),
    ],
)
def test_the_three_verdicts(before: dict[str, bool], after: dict[str, bool], verdict: str) -> None:
    """Fewer with no new blocking converges; unchanged blocking stalls; otherwise thrashing."""
    b, a = facts(before), facts(after)
    assert conv.classify(b.keys, b.blocking, a.keys, a.blocking) == verdict


# -- the reference: the definitions, written out directly ------------------------------


def reference_verdict(before: dict[str, bool], after: dict[str, bool]) -> str:
    fewer = len(after) < len(before)
    new_blocking = [k for k, blocking in after.items() if blocking and not before.get(k, False)]
    blocking_before = sorted(k for k, blocking in before.items() if blocking)
    blocking_after = sorted(k for k, blocking in after.items() if blocking)
    if fewer and not new_blocking:
        return "converging"
    if blocking_before == blocking_after:
        return "stalled"
    same_size_other_set = len(after) == len(before) and sorted(after) != sorted(before)
    if same_size_other_set:
        return "thrashing"
    return "thrashing"  # grew, or shrank while adding a blocker: not progress either


@dataclass
class Round:
    keys: dict[str, bool]
    diff: str
    checks: tuple[str, ...]
    passed: bool


def reference_run(rounds: list[Round], ceiling: int) -> list[tuple[str, str, str | None, int]]:
    """(verdict, action, ended_by, rung after) per round until the unit stops, halts or passes."""
    out: list[tuple[str, str, str | None, int]] = []
    rung = 1
    previous: Round | None = None
    for number, current in enumerate(rounds, start=1):
        verdict = "first" if previous is None else reference_verdict(previous.keys, current.keys)
        if current.passed:
            out.append((verdict, "approved", None, rung))
            return out
        same_signature = previous is not None and (
            sorted(previous.keys) == sorted(current.keys)
            and sorted(set(previous.checks)) == sorted(set(current.checks))
        )
        same_diff = previous is not None and previous.diff == current.diff
        if previous is not None and not previous.passed and (same_signature or same_diff):
            if rung == 4:
                out.append((verdict, "halted", "halted", 5))
                return out
            if number >= ceiling:
                out.append((verdict, "stopped", "ceiling", rung))
                return out
            rung += 1
            out.append((verdict, "promoted", None, rung))
        elif verdict in ("stalled", "thrashing"):
            out.append((verdict, "stopped", "progress-test", rung))
            return out
        elif number >= ceiling:
            out.append((verdict, "stopped", "ceiling", rung))
            return out
        else:
            out.append((verdict, "continue", None, rung))
        previous = current
    return out


def run(rounds: list[Round], ceiling: int) -> list[tuple[str, str, str | None, int]]:
    out: list[tuple[str, str, str | None, int]] = []
    rung = 1
    previous: conv.RoundFacts | None = None
    for number, r in enumerate(rounds, start=1):
        current = facts(r.keys, r.diff, r.passed, r.checks)
        decision = conv.decide(previous, current, round_no=number, rung=rung, ceiling=ceiling)
        rung = decision.rung
        out.append((decision.convergence, decision.action, decision.ended_by, rung))
        if decision.action not in ("continue", "promoted"):
            return out
        previous = current
    return out


KEYS = st.dictionaries(st.sampled_from("ABCDEF"), st.booleans(), max_size=5)
ROUNDS = st.lists(
    st.builds(
        Round,
        keys=KEYS,
        diff=st.sampled_from(["d1", "d2", "d3", "d4", "d5", "d6"]),
        checks=st.lists(st.sampled_from(["tests", "lint"]), max_size=2).map(tuple),
        passed=st.sampled_from([False, False, False, True]),  # mostly failing rounds
    ),
    min_size=1,
    max_size=9,
)


@settings(max_examples=400, deadline=None)
@given(before=KEYS, after=KEYS)
def test_classify_agrees_with_the_definitions(
    before: dict[str, bool], after: dict[str, bool]
) -> None:
    """Every pair of rounds gets the verdict the definitions give, and exactly one."""
    b, a = facts(before), facts(after)
    assert conv.classify(b.keys, b.blocking, a.keys, a.blocking) == reference_verdict(before, after)


@settings(max_examples=400, deadline=None)
@given(rounds=ROUNDS, ceiling=st.integers(min_value=1, max_value=7))
def test_round_sequences_agree_with_the_definitions(rounds: list[Round], ceiling: int) -> None:
    """A whole sequence: the same verdicts, actions, rungs and ending as the reference, the
    ceiling is never exceeded, and what ended the unit is always recorded."""
    got = run(rounds, ceiling)
    assert got == reference_run(rounds, ceiling)
    assert len(got) <= ceiling
    last = got[-1]
    if last[1] == "stopped":
        assert last[2] in ("progress-test", "ceiling")
    if last[2] == "ceiling":
        assert len(got) == ceiling and last[0] in ("first", "converging", "stalled", "thrashing")


def test_identical_signature_promotes_and_never_stops() -> None:
    """The same failure twice (even with a new diff) climbs a rung instead of stopping."""
    first, again = facts({"A": True}, "d1"), facts({"A": True}, "d2")
    decision = conv.decide(first, again, round_no=2, rung=1)
    assert (decision.convergence, decision.action, decision.rung) == ("stalled", "promoted", 2)
    assert "identical failure signature" in decision.why


def test_identical_diff_promotes_even_when_the_findings_moved() -> None:
    """The same diff twice is a finished rung, whatever the reviewer said about it."""
    decision = conv.decide(facts({"A": True}, "d1"), facts({"B": True}, "d1"), round_no=2, rung=2)
    assert (decision.convergence, decision.action, decision.rung) == ("thrashing", "promoted", 3)
    assert "identical diff" in decision.why


def test_the_ladder_halts_only_when_spent() -> None:
    """Identical failures promote through rungs 2, 3 and 4, and halt only past rung 4."""
    same = facts({"A": True}, "d1")
    rung, actions = 1, []
    for number in range(2, 6):
        decision = conv.decide(same, same, round_no=number, rung=rung)
        rung = decision.rung
        actions.append((decision.action, rung))
    assert actions == [("promoted", 2), ("promoted", 3), ("promoted", 4), ("halted", 5)]


def test_ceiling_ends_a_converging_unit_and_says_so() -> None:
    """At the ceiling a still-converging unit stops, and the ending names the ceiling."""
    decision = conv.decide(
        facts({"A": True, "B": True}, "d1"), facts({"A": True}, "d2"), round_no=6, rung=1
    )
    assert (decision.convergence, decision.action, decision.ended_by) == (
        "converging",
        "stopped",
        "ceiling",
    )


def test_a_halt_skips_the_ladder() -> None:
    """A halt condition lands on rung 5 at once, from any rung, in the first round too."""
    current = conv.RoundFacts(
        keys=frozenset(), blocking=frozenset(), signature="s", diff_digest="d", passed=False,
        halt="secret in diff",
    )  # fmt: skip
    decision = conv.decide(None, current, round_no=1, rung=1)
    assert (decision.action, decision.ended_by, decision.rung) == ("halted", "halted", 5)


def test_fold_keeps_rounds_rung_and_what_ended_the_unit() -> None:
    """The projection records each round, follows promotions, and takes the ending."""
    state = conv.initial()
    closed = RoundClosed(
        project="p", actor=SYSTEM, unit="U1", round=1, head="a" * 40,
        finding_keys=["code:a.py:1-1|high|C1"], blocking_keys=["code:a.py:1-1|high|C1"],
        failure_signature="s1", diff_digest="d1", passed=False, convergence="first",
        action="continue", rung=1, cause="c1",
    )  # fmt: skip
    promoted = RungPromoted(
        project="p", actor=SYSTEM, unit="U1", from_rung=1, to_rung=2, tactic="diagnose",
        why="identical failure signature", round=2, cause=closed.id,
    )  # fmt: skip
    failed = UnitTransitioned(
        project="p", actor=SYSTEM, unit="U1", state="failed", prior="working", by="halted",
        outcome=Outcome(summary="ceiling: round 6", ended_by="ceiling"),
    )  # fmt: skip
    for event in (closed, promoted, failed):
        state = conv.apply(state, event)
    view = conv.unit_view(state, "U1")
    assert view is not None
    assert [r.round for r in view.rounds] == [1]
    assert (view.rung, view.tactic, view.ended_by) == (2, "diagnose", "ceiling")
    assert conv.brief(state, "U1")["tactic"] == "diagnose"
