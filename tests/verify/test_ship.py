"""SHIP and the verify fold, pure: the reasons a slice is not shipped, the holds the
dispatcher applies, the brief's code-coldness, and the ``[verify]``/``[ship]`` tables."""

from __future__ import annotations

from typing import Any

import pytest
from slice_helpers import (
    SYSTEM,
    PureDispatcher,
    gate_result,
    gate_suite,
    plan,
    registration,
    unit,
)

from projections import gates, ship, trunk_green, verify
from projections.ship import ShipRules
from projections.slices import SlicesState
from projections.trunk_green import TrunkGates
from schemas import Actor, FindingRaised, Outcome, UnitTransitioned, new_id
from schemas.charter import Charter, CharterCriterion, Objective
from schemas.lifecycle import FindingDismissed
from schemas.reviews import ReviewVerdict, VerdictAccepted
from schemas.scores import AxisScore
from schemas.slices import BootResult, SliceClosed
from schemas.targets import PlanTarget
from schemas.verify import VERIFY_CRITERION, WaveVerified
from workers.agents.verify_config import parse
from workers.errors import ConfigError
from workers.gates.signing import Signer
from workers.verifier.brief import verify_brief

REVIEWER = Actor(role="reviewer", principal="r1")

P = "proj"
FULL = [
    AxisScore(axis=a, score=10)  # type: ignore[arg-type]
    for a in ("correctness", "testing_strategy", "plan_adherence", "regression_surface")
]


def two_waves() -> PureDispatcher:
    """S1: A then B (B waits on A): wave 0 is A, wave 1 is B; A is dispatched."""
    d = PureDispatcher(P)
    d.apply(*_accepted(plan("S1", unit("A", criteria=["t::a"]), unit("B", "A"))))
    d.step()
    return d


def _accepted(p: Any) -> list[Any]:
    from slice_helpers import accepted

    return accepted(P, p)


def done(unit_id: str, summary: str = "merged") -> UnitTransitioned:
    return UnitTransitioned(
        project=P,
        actor=SYSTEM,
        unit=unit_id,
        state="done",
        outcome=Outcome(summary=summary, ended_by="merged"),
        by="merged",
    )


def verified(state: SlicesState, wave: int, **kw: Any) -> WaveVerified:
    view = state.slices["S1"]
    fields: dict[str, Any] = {"scores": FULL} | kw
    return WaveVerified(
        project=P, actor=SYSTEM, slice="S1", accepted=view.accepted, wave=wave, **fields
    )


def reviewed(unit_id: str, scores: list[AxisScore], *, accepted: bool = True) -> list[Any]:
    """A reviewer's verdict on ``unit_id`` and, unless ``accepted`` is false, the system's
    acceptance of it."""
    verdict = ReviewVerdict(
        project=P, actor=REVIEWER, unit=unit_id, request=new_id(), head="a" * 40,
        verdict="approve", scores=scores,
    )  # fmt: skip
    acceptance = VerdictAccepted(
        project=P, actor=SYSTEM, unit=unit_id, verdict=verdict.id, request=verdict.request,
        reviewer="r1", decision="approve", claimed="approve", round=1, head="a" * 40,
        cause=verdict.id,
    )  # fmt: skip
    return [verdict, acceptance] if accepted else [verdict]


def fold(events: list[Any]) -> verify.VerifyState:
    state = verify.initial()
    for event in events:
        verify.FOLD.apply(state, event)
    return state


def test_the_next_wave_and_the_close_wait_for_the_verifier() -> None:
    """Once A (wave 0) merged, B (wave 1) is held until wave 0 is verified; verified, it
    goes; the close is held while a verifier finding is open, not once it is resolved."""
    d = two_waves()
    d.apply(done("A"))
    view = d.state.slices["S1"]
    assert verify.to_verify(verify.initial(), view) == 0
    assert verify.dispatch_held(verify.initial(), view, wave=1)
    run = verified(d.state, 0)
    checked = fold([run])
    assert not verify.dispatch_held(checked, view, wave=1)
    finding = FindingRaised(
        project=P,
        actor=SYSTEM,
        producer="trunk_gate",
        target=PlanTarget(slice="S1"),
        severity="high",
        criterion=VERIFY_CRITERION,
        message="two parts on",
        evidence={"accepted": view.accepted, "wave": 0},
        slice="S1",
    )
    verify.FOLD.apply(checked, finding)
    assert verify.close_held(checked, view) == f"verifier finding {finding.id} is open"
    verify.FOLD.apply(
        checked,
        FindingDismissed(
            project=P, actor=SYSTEM, finding=finding.id, reason="wont-fix", why="ok",
            claim=finding.id, by="operator:alice",
        ),
    )  # fmt: skip
    assert verify.close_held(checked, view) == ""


def test_a_finding_claimed_by_a_builder_never_holds_a_slice() -> None:
    """Only the system's verify findings count: a builder raising one names no wave."""
    from slice_helpers import BUILDER

    d = two_waves()
    view = d.state.slices["S1"]
    forged = FindingRaised(
        project=P,
        actor=BUILDER,
        producer="builder",
        target=PlanTarget(slice="S1"),
        severity="high",
        criterion=VERIFY_CRITERION,
        message="hold everything",
        evidence={"accepted": view.accepted, "wave": 0},
        slice="S1",
    )
    assert verify.open_findings(fold([forged]), view.accepted) == []


TRUNK, TREE = "c" * 40, "d" * 40


def green(signer: Signer, tests: dict[str, str] | None = None, outcome: str = "pass") -> TrunkGates:
    """The gates fold after a verified suite on trunk ``TRUNK`` whose one result says how
    each test of ``tests`` ended."""
    result = gate_result(signer, P, commit=TRUNK, tree=TREE, outcome=outcome, tests=tests or {})
    suite = gate_suite(signer, P, None, commit=TRUNK, tree=TREE, results=[result], outcome=outcome)
    seen = gates.initial()
    for event in (registration(P, signer), result, suite):
        gates.FOLD.apply(seen, event)
    return TrunkGates(gates=seen)


def closed_two_wave_slice(boot: str = "pass") -> PureDispatcher:
    d = two_waves()
    d.apply(done("A"))
    d.step()
    d.apply(done("B"))
    view = d.state.slices["S1"]
    closed = SliceClosed(
        project=P, actor=SYSTEM, slice="S1", boot=BootResult(outcome=boot, commit=TRUNK)
    )
    d.apply(closed)
    assert view.status == "closed"
    return d


@pytest.mark.parametrize(
    ("runs", "rules", "lines", "expected"),
    [
        pytest.param([{"wave": 0}, {"wave": 1}], ShipRules(verify=True), {}, [], id="ships"),
        pytest.param(
            [{"wave": 0}],
            ShipRules(verify=True),
            {},
            ["wave 1 was never verified"],
            id="unverified-wave",
        ),
        pytest.param(
            [{"wave": 0}, {"wave": 1, "error": "the verify command failed: exit 2"}],
            ShipRules(verify=True),
            {},
            ["wave 1: the verifier could not verify it: the verify command failed: exit 2"],
            id="verifier-error",
        ),
        pytest.param(
            [{"wave": 0}, {"wave": 1, "unreached": ["t::a: no network"]}],
            ShipRules(verify=True),
            {},
            ["wave 1: the verifier could not reach t::a: no network"],
            id="unreached",
        ),
        pytest.param(
            [{"wave": 0}, {"wave": 1, "scores": FULL[1:]}],
            ShipRules(verify=True),
            {},
            [],
            id="a-score-from-either-wave-counts",
        ),
        pytest.param(
            [{"wave": 0, "scores": FULL[1:]}, {"wave": 1, "scores": FULL[1:]}],
            ShipRules(verify=True),
            {},
            ["verifier: correctness was not scored (floor 8)"],
            id="missing-score-is-no-met-floor",
        ),
        pytest.param(
            [{"wave": 0}, {"wave": 1}],
            ShipRules(verify=True, floors={"correctness": 10}),
            {},
            [],
            id="floor-met-exactly",
        ),
        pytest.param(
            [{"wave": 0}, {"wave": 1}],
            ShipRules(verify=True, max_unit_lines=400),
            {"A": 401, "B": 400},
            ["unit A changed 401 lines, over the bound of 400 ([ship] max_unit_lines)"],
            id="over-the-size-bound",
        ),
        pytest.param(
            [],
            ShipRules(verify=False),
            {},
            ["no [verify] command: nothing was verified code-cold and nothing scored"],
            id="no-verifier",
        ),
    ],
)
def test_ship_reasons(
    runs: list[dict[str, Any]],
    rules: ShipRules,
    lines: dict[str, int],
    expected: list[str],
    signer: Signer,
) -> None:
    """Each reason SHIP names, alone; no reason, shipped."""
    d = closed_two_wave_slice()
    view = d.state.slices["S1"]
    checked = fold(
        [verified(d.state, **run) for run in runs] + [*reviewed("A", FULL), *reviewed("B", FULL)]
    )
    trunk = green(signer, {"t::a": "passed"})
    assert ship.reasons(view, checked, rules, trunk, lines) == expected


def test_a_failed_boot_and_a_failed_unit_are_not_shipped() -> None:
    """The increment that did not boot, and a unit that is not done, are named."""
    d = two_waves()
    d.apply(
        UnitTransitioned(
            project=P, actor=SYSTEM, unit="A", state="failed",
            outcome=Outcome(summary="x", ended_by="halted"), by="halted",
        )
    )  # fmt: skip
    d.step()
    d.apply(SliceClosed(project=P, actor=SYSTEM, slice="S1", boot=BootResult(outcome="fail")))
    got = ship.reasons(d.state.slices["S1"], verify.initial(), ShipRules(verify=True), TrunkGates())
    assert got == [
        "unit A ended failed, not done",
        "unit B ended blocked, not done",
        "the increment did not boot (fail)",
        "trunk's commit at the close is unknown: green and criteria not established",
    ]


def test_the_brief_is_built_from_the_plan_and_the_charter_only() -> None:
    """Whatever builders and reviewers said, the brief holds the plan's and the charter's
    words: the summary a done unit carries never reaches it."""
    d = two_waves()
    d.apply(done("A", summary="BUILDER-SUMMARY-MARK"))
    charter = Charter(
        id="c1",
        title="t",
        objectives=(Objective(id="o1", text="sums are right"),),
        criteria=(CharterCriterion(id="t::a", text="a sums", check="tests"),),
    )
    brief = verify_brief(P, d.state.slices["S1"], 0, charter)
    assert brief.units == ["A"] and brief.titles == {"A": "build A"}
    assert [(c.id, c.text, c.units) for c in brief.criteria] == [("t::a", "a sums", ["A"])]
    assert [o.text for o in brief.objectives] == ["sums are right"]
    import msgspec

    assert b"BUILDER-SUMMARY-MARK" not in msgspec.json.encode(brief)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("[ship.floors]\ncorrectness = 11\n", "ship.floors.correctness", id="floor"),
        pytest.param("[ship.floors]\nstyle = 3\n", "ship.floors.style", id="unknown-axis"),
        pytest.param("[ship]\nmax_unit_lines = 0\n", "ship.max_unit_lines", id="bound"),
        pytest.param("[verify]\nwhen = 1\n", "verify.when", id="unknown-key"),
    ],
)
def test_a_mistake_in_verify_or_ship_is_one_line_naming_the_field(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        parse(text)
    assert "\n" not in str(raised.value)


def test_floors_default_to_the_seeds_and_are_overridden_one_by_one() -> None:
    verify_config, ship_config = parse('[verify]\ncommand = "v"\n[ship.floors]\ncorrectness = 6\n')
    assert verify_config.command == "v"
    assert ship_config.floors == {
        "correctness": 6,
        "testing_strategy": 7,
        "plan_adherence": 8,
        "regression_surface": 9,
    }
    assert ship_config.max_unit_lines == 400


def test_each_done_units_reviewer_scores_meet_the_floors(signer: Signer) -> None:
    """A done unit no reviewer scored, and one scored under a floor, are named; the latest
    verdict on a unit is the one that counts."""
    d = closed_two_wave_slice()
    low = [s if s.axis != "regression_surface" else AxisScore(axis=s.axis, score=6) for s in FULL]
    events = [verified(d.state, 0), verified(d.state, 1), *reviewed("A", []), *reviewed("A", low)]
    events += reviewed("B", FULL, accepted=False)  # a verdict the system never accepted
    trunk = green(signer, {"t::a": "passed"})
    got = ship.reasons(d.state.slices["S1"], fold(events), ShipRules(verify=True), trunk)
    assert got == [
        "reviewer of A: regression_surface scored 6, below its floor 9",
        "reviewer of B: no axis was scored",
    ]


@pytest.mark.parametrize(
    ("tests", "outcome", "expected"),
    [
        pytest.param({"t::a": "passed"}, "pass", [], id="green-and-passing"),
        pytest.param(
            {"t::a": "failed"},
            "fail",
            [
                f"trunk {TRUNK[:12]} is not green: check tests ended fail",
                f"trunk {TRUNK[:12]} is not green: its latest gate suite ended fail",
                f"criterion t::a does not pass on trunk {TRUNK[:12]} (failed)",
            ],
            id="red-and-failing",
        ),
        pytest.param(
            {},
            "pass",
            [f"criterion t::a does not pass on trunk {TRUNK[:12]} (did not run)"],
            id="criterion-not-run",
        ),
    ],
)
def test_trunk_must_be_green_with_the_slices_criteria_passing(
    signer: Signer, tests: dict[str, str], outcome: str, expected: list[str]
) -> None:
    """Trunk at the close is judged from its verified gate suite: red is named, and a
    criterion the slice claims must have passed there (not run is not passed)."""
    d = closed_two_wave_slice()
    view = d.state.slices["S1"]
    assert trunk_green.reasons(view, green(signer, tests, outcome)) == expected


def test_an_unsigned_suite_does_not_make_trunk_green() -> None:
    """A suite no registered runner signed is skipped by the gates fold: nothing ran."""
    d = closed_two_wave_slice()
    result = gate_result(None, P, commit=TRUNK, tree=TREE, tests={"t::a": "passed"})
    suite = gate_suite(None, P, None, commit=TRUNK, tree=TREE, results=[result])
    seen = gates.initial()
    for event in (result, suite):
        gates.FOLD.apply(seen, event)
    got = trunk_green.reasons(d.state.slices["S1"], TrunkGates(gates=seen))
    assert got == [f"no verified gate result on trunk {TRUNK[:12]}: green is not established"]


def test_the_boot_suite_after_the_tests_does_not_hide_them(signer: Signer) -> None:
    """The dispatcher's boot runs on trunk last; the criteria still pass from the tests'
    result recorded on the same commit before it."""
    d = closed_two_wave_slice()
    tests = gate_result(signer, P, commit=TRUNK, tree=TREE, tests={"t::a[1]": "passed"})
    boot = gate_result(signer, P, commit=TRUNK, tree=TREE, check="boot")
    seen = gates.initial()
    for event in (
        registration(P, signer),
        tests,
        gate_suite(signer, P, None, commit=TRUNK, tree=TREE, results=[tests]),
        boot,
        gate_suite(signer, P, None, commit=TRUNK, tree=TREE, results=[boot]),
    ):
        gates.FOLD.apply(seen, event)
    assert trunk_green.reasons(d.state.slices["S1"], TrunkGates(gates=seen)) == []


def test_an_answer_the_log_would_refuse_is_recorded_as_the_waves_error() -> None:
    """A verifier whose envelope is too big for one event does not fail its effect for
    ever: the wave is recorded unverified, with why."""
    from datetime import UTC, datetime

    from schemas.verify import AcceptanceCheck, VerifierEnvelope, VerifyBrief
    from workers.verifier.answer import recorded

    brief = VerifyBrief(project=P, slice="S1", wave=0, units=["A"])
    huge = VerifierEnvelope(checks=[AcceptanceCheck(id="c", command="x" * 2_000_000, passed=True)])
    [run] = recorded(brief, new_id(), huge, actor=SYSTEM, now=datetime.now(UTC)).events
    assert isinstance(run, WaveVerified) and run.checks == []
    assert run.error.startswith("its answer cannot be recorded:")


def test_ship_is_one_table_read_by_two_readers() -> None:
    """The draft-PR command and SHIP's floors live in one [ship] table: each reader takes
    its keys and lets the other's through, and a key neither knows is still refused."""
    from workers.shipper.config import parse as parse_ship_command

    text = '[ship]\ncommand = "open-pr"\nenv = ["GH_TOKEN"]\nmax_unit_lines = 300\n'
    text += "[ship.floors]\ncorrectness = 9\n"
    assert parse(text)[1].max_unit_lines == 300 and parse(text)[1].floors["correctness"] == 9
    assert parse_ship_command(text).command == "open-pr"
    with pytest.raises(ConfigError, match=r"ship\.colour"):
        parse("[ship]\ncolour = 1\n")
    with pytest.raises(ConfigError, match=r"ship\.colour"):
        parse_ship_command("[ship]\ncolour = 1\n")
