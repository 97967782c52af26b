"""Convergence, pure: the verdicts (judged on finding keys and trees), the no-progress guard,
the ceiling and the ladder, checked against a direct implementation of the definitions on
generated round sequences."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections import convergence as conv
from projections import round_rules
from schemas import Actor, Outcome, UnitTransitioned
from schemas.reviews import RoundClosed, RungPromoted
from schemas.slices import RetryDecided

SYSTEM = Actor(role="system", principal="tests")


@dataclass
class Round:
    keys: dict[str, bool]
    """key -> blocking"""
    source: str = "review"
    tree: str = ""
    checks: tuple[str, ...] = ()
    passed: bool = False


def facts(r: Round) -> round_rules.RoundFacts:
    return round_rules.RoundFacts(
        keys=frozenset(r.keys),
        blocking=frozenset(k for k, b in r.keys.items() if b),
        signature=round_rules.failure_signature(r.checks, r.keys),
        diff_digest="d",
        passed=r.passed,
        tree=r.tree,
        source=r.source,  # type: ignore[arg-type]
    )


def verdict(earlier: list[Round], current: Round, stall: int = round_rules.DEFAULT_STALL) -> str:
    return round_rules.classify([facts(r) for r in earlier], facts(current), stall)


GATE_RED = Round({"check:tests|high|gate-fail": True}, source="gate", tree="t1")
REJECTED = Round({"code:src/app.py:2-2|high|C1": True}, tree="t2")


@pytest.mark.parametrize(
    ("earlier", "current", "expected"),
    [
        pytest.param([], GATE_RED, "first", id="first"),
        pytest.param(
            [GATE_RED], REJECTED, "converging", id="gate-fixed-then-unrelated-review-finding"
        ),
        pytest.param(
            [Round({"A": True}, tree="t1")],
            Round({"B": True}, tree="t2"),
            "converging",
            id="same-size-other-set-is-progress",
        ),
        pytest.param(
            [Round({"A": True, "B": True}, tree="t1")],
            Round({"A": True}, tree="t2"),
            "converging",
            id="fewer",
        ),
        pytest.param(
            [Round({"A": True}, tree="t1"), Round({"B": True}, tree="t2")],
            Round({"A": True}, tree="t3"),
            "thrashing",
            id="resolved-key-reappears",
        ),
        pytest.param(
            [GATE_RED, REJECTED],
            Round({"check:tests|high|gate-fail": True}, source="gate", tree="t3"),
            "thrashing",
            id="fixed-gate-breaks-again",
        ),
        pytest.param(
            [Round({"A": True}, tree="t1"), Round({"B": True}, tree="t2")],
            Round({"C": True}, tree="t1"),
            "thrashing",
            id="tree-returns",
        ),
        pytest.param(
            [Round({"R": True}, tree="t1"), Round({"G": True}, source="gate", tree="t2")],
            Round({"R": True}, tree="t3"),
            "converging",
            id="a-red-suite-does-not-resolve-a-review-finding",
        ),
        pytest.param(
            [Round({"A": True}, tree="t1"), Round({"B": True}, tree="t2"), Round({"C": True})],
            Round({"D": True}, tree="t4"),
            "stalled",
            id="open-set-did-not-shrink-over-three-rounds",
        ),
        pytest.param(
            [Round({"A": True, "B": True}, tree="t1"), Round({"B": True}), Round({"C": True})],
            Round({"D": True}, tree="t4"),
            "converging",
            id="open-set-shrank-over-three-rounds",
        ),
        pytest.param(
            [Round({"A": True}, tree="t1"), Round({}, tree="t2", passed=True)],
            Round({"A": True}, tree="t1"),
            "first",
            id="an-approval-starts-a-new-history",
        ),
    ],
)
def test_the_verdicts(earlier: list[Round], current: Round, expected: str) -> None:
    """Thrashing is a resolved key back or a tree returning; stalled an open blocking set
    that did not shrink over N rounds; fixing what was asked, whatever new comes, converges."""
    assert verdict(earlier, current) == expected


def test_the_stall_window_is_a_setting() -> None:
    """N rounds is ``[review] stall``: the same three rounds stall at N=2, not at N=3."""
    earlier = [Round({"A": True}, tree="t1"), Round({"B": True}, tree="t2")]
    current = Round({"C": True}, tree="t3")
    assert verdict(earlier, current, stall=2) == "stalled"
    assert verdict(earlier, current, stall=3) == "converging"


def test_judge_says_why() -> None:
    """The reason names the key raised again, or the round whose tree came back."""
    earlier = [Round({"A": True}, tree="t1"), Round({"B": True}, tree="t2")]
    _, why = round_rules.judge([facts(r) for r in earlier], facts(Round({"A": True}, tree="t3")))
    assert "raised again" in why and "A" in why
    _, why = round_rules.judge([facts(r) for r in earlier], facts(Round({"C": True}, tree="t1")))
    assert "returns to round 1" in why


# -- the reference: the definitions, written out directly ------------------------------


def resolves(raised_by: str, later: Round, key: str) -> bool:
    """Does ``later`` resolve ``key`` last raised by a round of source ``raised_by``?"""
    return key not in later.keys and (raised_by == "gate" or later.source == "review")


def reference_open_blocking(rounds: list[Round]) -> int:
    """The blocking keys open after ``rounds``: raised, and not resolved since their last
    raise."""
    count = 0
    for key in {k for r in rounds for k in r.keys}:
        last = max(i for i, r in enumerate(rounds) if key in r.keys)
        raiser = rounds[last]
        if not raiser.keys[key]:
            continue
        if not any(resolves(raiser.source, later, key) for later in rounds[last + 1 :]):
            count += 1
    return count


def reference_verdict(earlier: list[Round], current: Round, stall: int) -> str:
    passed = [i for i, r in enumerate(earlier) if r.passed]
    window = earlier[passed[-1] + 1 :] if passed else list(earlier)
    if not window:
        return "first"
    for key in current.keys:
        raised = [i for i, r in enumerate(window) if key in r.keys]
        if raised:
            last = raised[-1]
            source = window[last].source
            if any(resolves(source, later, key) for later in window[last + 1 :]):
                return "thrashing"
    if current.tree and current.tree in [r.tree for r in window[:-1]]:
        return "thrashing"
    rounds = [*window, current]
    if len(window) >= stall:
        now = reference_open_blocking(rounds)
        before = reference_open_blocking(rounds[: len(rounds) - stall])
        if now >= before:
            return "stalled"
    return "converging"


def reference_run(
    rounds: list[Round], ceiling: int, stall: int
) -> list[tuple[str, str, str | None, int]]:
    """(verdict, action, ended_by, rung after) per round until the unit stops, halts or passes."""
    out: list[tuple[str, str, str | None, int]] = []
    rung = 1
    for number, current in enumerate(rounds, start=1):
        earlier = rounds[: number - 1]
        verdict = reference_verdict(earlier, current, stall)
        if current.passed:
            out.append((verdict, "approved", None, rung))
            return out
        previous = earlier[-1] if earlier else None
        same_signature = previous is not None and (
            sorted(previous.keys) == sorted(current.keys)
            and sorted(set(previous.checks)) == sorted(set(current.checks))
        )
        same_tree = previous is not None and current.tree != "" and previous.tree == current.tree
        if previous is not None and not previous.passed and (same_signature or same_tree):
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
    return out


def run(rounds: list[Round], ceiling: int, stall: int) -> list[tuple[str, str, str | None, int]]:
    out: list[tuple[str, str, str | None, int]] = []
    rung = 1
    for number, r in enumerate(rounds, start=1):
        earlier = [facts(e) for e in rounds[: number - 1]]
        decision = round_rules.decide(
            earlier, facts(r), round_no=number, rung=rung, ceiling=ceiling, stall=stall
        )
        rung = decision.rung
        out.append((decision.convergence, decision.action, decision.ended_by, rung))
        if decision.action not in ("continue", "promoted"):
            return out
    return out


KEYS = st.dictionaries(st.sampled_from("ABCDEF"), st.booleans(), max_size=4)
ROUNDS = st.lists(
    st.builds(
        Round,
        keys=KEYS,
        source=st.sampled_from(["review", "review", "gate"]),
        tree=st.sampled_from(["t1", "t2", "t3", "t4", "t5", "t6", ""]),
        checks=st.lists(st.sampled_from(["tests", "lint"]), max_size=2).map(tuple),
        passed=st.sampled_from([False, False, False, False, True]),  # mostly failing
    ),
    min_size=1,
    max_size=9,
)


@settings(max_examples=400, deadline=None)
@given(rounds=ROUNDS, stall=st.integers(min_value=1, max_value=4))
def test_classify_agrees_with_the_definitions(rounds: list[Round], stall: int) -> None:
    """Every round gets the verdict the definitions give, and exactly one."""
    *earlier, current = rounds
    assert verdict(earlier, current, stall) == reference_verdict(earlier, current, stall)


@settings(max_examples=400, deadline=None)
@given(
    rounds=ROUNDS,
    ceiling=st.integers(min_value=1, max_value=7),
    stall=st.integers(min_value=1, max_value=4),
)
def test_round_sequences_agree_with_the_definitions(
    rounds: list[Round], ceiling: int, stall: int
) -> None:
    """A whole sequence: the same verdicts, actions, rungs and ending as the reference, the
    ceiling is never exceeded, and what ended the unit is always recorded."""
    got = run(rounds, ceiling, stall)
    assert got == reference_run(rounds, ceiling, stall)
    assert len(got) <= ceiling
    last = got[-1]
    if last[1] == "stopped":
        assert last[2] in ("progress-test", "ceiling")
    if last[2] == "ceiling":
        assert len(got) == ceiling


def test_a_red_gate_then_an_unrelated_rejection_goes_on_on_the_same_rung() -> None:
    """Round 1 red at its gate, round 2 (the gate fixed) rejected for something else:
    converging, sent back on rung 1, neither stopped nor promoted."""
    decision = round_rules.decide([facts(GATE_RED)], facts(REJECTED), round_no=2, rung=1)
    assert (decision.convergence, decision.action, decision.rung) == ("converging", "continue", 1)


def test_identical_signature_promotes_and_never_stops() -> None:
    """The same failure twice (even on a new tree) climbs a rung instead of stopping."""
    first, again = Round({"A": True}, tree="t1"), Round({"A": True}, tree="t2")
    decision = round_rules.decide([facts(first)], facts(again), round_no=2, rung=1)
    assert (decision.action, decision.rung) == ("promoted", 2)
    assert "identical failure signature" in decision.why


def test_identical_tree_promotes_even_when_the_findings_moved() -> None:
    """The same tree twice is a finished rung, whatever the reviewer said about it."""
    first, again = Round({"A": True}, tree="t1"), Round({"B": True}, tree="t1")
    decision = round_rules.decide([facts(first)], facts(again), round_no=2, rung=2)
    assert (decision.action, decision.rung) == ("promoted", 3)
    assert "identical tree" in decision.why


def test_a_thrashing_round_stops_on_the_progress_test_and_says_why() -> None:
    """A key resolved in round 2 back in round 3: stopped by the progress test, the key named."""
    earlier = [facts(Round({"A": True}, tree="t1")), facts(Round({"B": True}, tree="t2"))]
    decision = round_rules.decide(earlier, facts(Round({"A": True}, tree="t3")), round_no=3, rung=1)
    assert (decision.convergence, decision.action, decision.ended_by) == (
        "thrashing",
        "stopped",
        "progress-test",
    )
    assert "raised again after it was resolved: A" in decision.why


def test_the_ladder_halts_only_when_spent() -> None:
    """Identical failures promote through rungs 2, 3 and 4, and halt only past rung 4."""
    same = facts(Round({"A": True}, tree="t1"))
    rung, actions = 1, []
    for number in range(2, 6):
        decision = round_rules.decide([same], same, round_no=number, rung=rung)
        rung = decision.rung
        actions.append((decision.action, rung))
    assert actions == [("promoted", 2), ("promoted", 3), ("promoted", 4), ("halted", 5)]


def test_ceiling_ends_a_converging_unit_and_says_so() -> None:
    """At the ceiling a still-converging unit stops, and the ending names the ceiling."""
    earlier = [facts(Round({"A": True, "B": True}, tree="t1"))]
    decision = round_rules.decide(earlier, facts(Round({"A": True}, tree="t2")), round_no=6, rung=1)
    assert (decision.convergence, decision.action, decision.ended_by) == (
        "converging",
        "stopped",
        "ceiling",
    )


def test_a_halt_skips_the_ladder() -> None:
    """A halt condition lands on rung 5 at once, from any rung, in the first round too."""
    current = round_rules.RoundFacts(
        keys=frozenset(), blocking=frozenset(), signature="s", diff_digest="d", passed=False,
        halt="secret in diff",
    )  # fmt: skip
    decision = round_rules.decide([], current, round_no=1, rung=1)
    assert (decision.action, decision.ended_by, decision.rung) == ("halted", "halted", 5)


def closed_round(number: int, keys: list[str], tree: str, source: str = "review") -> RoundClosed:
    return RoundClosed(
        project="p", actor=SYSTEM, unit="U1", round=number, head="a" * 40, source=source,
        tree=tree, finding_keys=keys, blocking_keys=keys, failure_signature=f"s{number}",
        diff_digest=f"d{number}", passed=False, convergence="first", action="continue",
        rung=1, cause=f"c{number}",
    )  # fmt: skip


def test_fold_keeps_rounds_rung_and_what_ended_the_unit() -> None:
    """The projection records each round (with its tree), follows promotions, and takes
    the ending."""
    closed = closed_round(1, ["code:a.py:1-1|high|C1"], "t1", source="gate")
    promoted = RungPromoted(
        project="p", actor=SYSTEM, unit="U1", from_rung=1, to_rung=2, tactic="diagnose",
        why="identical failure signature", round=2, cause=closed.id,
    )  # fmt: skip
    failed = UnitTransitioned(
        project="p", actor=SYSTEM, unit="U1", state="failed", prior="working", by="halted",
        outcome=Outcome(summary="ceiling: round 6", ended_by="ceiling"),
    )  # fmt: skip
    state = conv.FOLD.fold([closed, promoted, failed])
    view = conv.unit_view(state, "U1")
    assert view is not None
    assert [(r.round, r.tree, r.source) for r in view.rounds] == [(1, "t1", "gate")]
    assert view.facts()[0].source == "gate" and view.facts()[0].tree == "t1"
    assert (view.rung, view.tactic, view.ended_by) == (2, "diagnose", "ceiling")
    assert conv.brief(state, "U1")["tactic"] == "diagnose"


def test_fold_takes_a_granted_retry_as_a_promotion_and_the_revival_clears_the_ending() -> None:
    """A retry decision that grants a retry moves the unit up the ladder; the move back to
    work clears what ended it; a refused retry is kept in words and changes no rung."""
    failed = UnitTransitioned(
        project="p", actor=SYSTEM, unit="U1", state="failed", prior="working", by="halted",
        outcome=Outcome(summary="thrashing", ended_by="progress-test"),
    )  # fmt: skip
    granted = RetryDecided(
        project="p", actor=SYSTEM, slice="S1", unit="U1", failure=failed.id,
        ended_by="progress-test", retry=True, from_rung=1, to_rung=2, why="it thrashed",
    )  # fmt: skip
    revived = UnitTransitioned(
        project="p", actor=SYSTEM, unit="U1", state="working", prior="failed", by="retried",
        cause=granted.id,
    )  # fmt: skip
    state = conv.FOLD.fold([closed_round(1, ["A"], "t1"), failed, granted, revived])
    view = conv.unit_view(state, "U1")
    assert view is not None
    assert (view.rung, view.tactic, view.ended_by, view.outcome) == (2, "diagnose", None, None)
    assert view.retries == ["retried on rung 2 (diagnose) because it thrashed"]
    refused = RetryDecided(
        project="p", actor=SYSTEM, slice="S1", unit="U1", failure="f2", ended_by="gave-up",
        retry=False, from_rung=2, to_rung=2, why="the slice's rework budget is spent",
    )  # fmt: skip
    conv.apply(state, refused)
    assert view.rung == 2 and view.retries[-1] == "not retried: the slice's rework budget is spent"
