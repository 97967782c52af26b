"""The transition table holds: random claims and system facts, decided by the real logic,
never put a forbidden transition on the log — and the audit that says so can fail."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unitkit import all_answered, claim, log_events, plan, units_daemon, wait_log

from bus import Bus, connect
from projections import claims
from projections import units as units_fold
from projections.claims import Move, References, transition_event
from projections.transitions import ALLOWED, TABLE, audit
from schemas import (
    BLOCK_REASONS,
    Actor,
    Block,
    Event,
    FindingRaised,
    Outcome,
    UnitPlanned,
    UnitTransitioned,
    parse_target,
)
from schemas.authority import refused_claim
from schemas.ids import answer_id
from schemas.reports import UnitReport
from schemas.slices import RetryDecided
from workers.kernel import Kernel
from workers.runtime import cancel_all
from workers.units.answer_ids import ANSWER_SALT
from workers.units.daemon import refusal_finding
from workers.watchdog.daemon import Watchdog
from workers.watchdog.limits import Limits

PROJECT = "prop"
SYSTEM = Actor(role="system", principal="test-system")
UNITS = ["U1", "U2", "U3"]
OPEN_FINDING = "01JAAAAAAAAAAAAAAAAAAAAAAA"
SUBJECTS = [
    "",
    "U1",
    "U2",
    "U3",
    "U4",
    "U9",
    OPEN_FINDING,
    "01JBBBBBBBBBBBBBBBBBBBBBBB",
    "lint",
    "no such",
    "tokens_per_unit",
    "capacity",
    "coffee",
]
REASONS = [*BLOCK_REASONS, "awaiting-godot"]
SHAS = ["a" * 40, "b" * 40, "abc123"]
ROLES = ["builder"] * 6 + ["operator", "reviewer"]

VALID_BLOCKS = [
    ("awaiting-operator", OPEN_FINDING),
    ("awaiting-dependency", "U1"),
    ("awaiting-dependency", "U2"),
    ("awaiting-gate", "lint"),
    ("awaiting-capacity", "capacity"),
]
# Weighted so that most sequences get somewhere: mostly valid claims by builders on
# planned units, with every kind of mistake mixed in.
report_steps = st.tuples(
    st.just("report"),
    st.sampled_from([*UNITS, *UNITS, *UNITS, "U4"]),
    st.sampled_from(["started"] * 2 + ["blocked", "unblocked", "commit"] * 4 + ["gave-up"]),
    st.one_of(
        st.sampled_from(VALID_BLOCKS),
        st.sampled_from(VALID_BLOCKS),
        st.tuples(st.sampled_from(REASONS), st.sampled_from(SUBJECTS)),
    ),
    st.sampled_from([SHAS[0], SHAS[0], SHAS[1], SHAS[2]]),
    st.sampled_from(["stuck", "stuck", ""]),
    st.sampled_from(ROLES),
)
system_steps = st.tuples(
    # halting ends a unit: kept rare so that sequences go somewhere
    st.sampled_from(
        [
            "lapse",
            "gates",
            "gates",
            "gates",
            "hold",
            "merged",
            "merged",
            "returned",
            "escalate",
            "halt",
        ]
    ),
    st.sampled_from(UNITS),
    st.sampled_from([*UNITS, "U9"]),
    st.sampled_from(SHAS[:2]),
    st.booleans(),
)
STARTS = [("report", u, "started", VALID_BLOCKS[0], SHAS[0], "", "builder") for u in UNITS[:2]]
steps = st.lists(
    st.one_of(report_steps, report_steps, report_steps, system_steps), max_size=80
).map(lambda body: STARTS + body)  # two units start at once; U3 stays planned (for holds)


def _report(step: tuple[Any, ...], project: str = PROJECT) -> UnitReport:
    _, unit, verb, (reason, subject), sha, why, role = step
    fields: dict[str, Any] = {"actor": Actor(role=role, principal="p")}
    if verb == "blocked":
        fields |= {"reason": reason, "subject": subject}
    elif verb == "commit":
        fields["sha"] = sha
    elif verb == "gave-up":
        fields["why"] = why
    return claim(project, unit, verb, **fields)


def _system(state: units_fold.UnitsState, step: tuple[Any, ...], now: datetime) -> Any:
    kind, unit, other, sha, flag = step
    view = state.units[unit]
    refs = References(open_findings={OPEN_FINDING})
    cause = "01JCCCCCCCCCCCCCCCCCCCCCCC"
    match kind:
        case "lapse":  # ``flag``: silent for an hour; else swept within the lapse
            return claims.lapse(view, None, 60.0, now + timedelta(hours=1 if flag else 0))
        case "gates":  # ``flag``: a passing suite for the unit's head; else a suite for ``sha``
            return claims.gates(view, view.head if flag else sha, flag, cause)
        case "hold":
            return claims.hold(state, view, other, cause)
        case "merged":
            return claims.merged(view, cause, "merged cleanly")
        case "returned":
            return claims.returned(view, cause)
        case "escalate":
            return claims.escalate(view, OPEN_FINDING if flag else "nope", refs, cause)
        case "halt":
            return claims.halt(view, cause, "stopped: thrashing")
    raise AssertionError(kind)


def run_steps(script: list[tuple[Any, ...]]) -> list[Event]:
    """Drive the real decision logic over ``script``, building the log the daemons would."""
    now = datetime(2030, 1, 1, tzinfo=UTC)
    events: list[Event] = [
        UnitPlanned(project=PROJECT, actor=SYSTEM, unit=u, slice="S1", at=now) for u in UNITS
    ]
    events.append(UnitPlanned(project=PROJECT, actor=SYSTEM, unit="U9", slice="S2", at=now))
    state = units_fold.FOLD.fold(events)
    refs = References(open_findings={OPEN_FINDING})

    def add(event: Event) -> None:
        nonlocal state
        events.append(event)
        state = units_fold.apply(state, event)

    for index, step in enumerate(script):
        now += timedelta(seconds=1)
        if step[0] == "report":
            report = _report(step)
            add(report)
            verdict = claims.decide(state, report, refs)
            answer = answer_id(report.id, ANSWER_SALT)
            if isinstance(verdict, Move):
                add(transition_event(verdict, PROJECT, SYSTEM, answer))
            else:
                refusal = refusal_finding(PROJECT, report, verdict, state, SYSTEM, answer)
                assert refused_claim(refusal) == report.id  # it answers the report, by id
                add(refusal)
        else:
            verdict = _system(state, step, now)
            if isinstance(verdict, Move):
                add(
                    transition_event(verdict, PROJECT, SYSTEM, answer_id(events[-1].id, str(index)))
                )
    return events


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_random_claims_and_facts_never_log_a_forbidden_transition(
    script: list[tuple[Any, ...]],
) -> None:
    """Random claims and system facts, decided by the real logic, log no forbidden transition."""
    events = run_steps(script)
    assert audit(events) == []
    final = units_fold.FOLD.fold(events)
    assert final.claims == {}  # every claim was answered
    for view in final.units.values():
        assert not (view.ready and view.state != "working")


def test_the_table_has_no_way_out_of_done_or_lost_and_no_claim_makes_ready_or_done() -> None:
    """DONE and LOST have no outgoing row, and FAILED only the dispatcher's retry (no claim
    revives a unit); only the merger's fact reaches DONE."""
    assert not [r for r in TABLE if r.prior in ("done", "lost")]
    assert [(r.state, r.by, r.who) for r in TABLE if r.prior == "failed"] == [
        ("working", "retried", "dispatcher")
    ]
    assert {r.by for r in TABLE if r.state == "done"} == {"merged"}
    assert {r.by for r in TABLE if r.state == "lost"} == {"heartbeat-lapse"}
    assert len(ALLOWED) == len(TABLE)


def _t(unit: str, state: str, prior: str | None, by: str | None, **kw: Any) -> UnitTransitioned:
    if state == "blocked" and "block" not in kw:
        kw["block"] = Block(reason="awaiting-dependency", subject="U2")
    if state in ("done", "failed", "lost") and "outcome" not in kw:
        kw["outcome"] = Outcome(summary="s", ended_by="x")
    kw.setdefault("actor", SYSTEM)
    return UnitTransitioned(
        project=PROJECT,
        unit=unit,
        state=state,
        prior=prior,
        by=by,
        **kw,  # type: ignore[arg-type]
    )


def _forbidden_logs() -> list[Any]:
    planned = [UnitPlanned(project=PROJECT, actor=SYSTEM, unit=u, slice="S1") for u in UNITS]
    start = claim(PROJECT, "U1", "started")
    block = claim(PROJECT, "U1", "blocked", reason="awaiting-dependency", subject="U2")
    working = _t("U1", "working", None, "started", cause=start.id)
    builder = Actor(role="builder", principal="b")
    gave_up = claim(PROJECT, "U1", "gave-up", why="stuck")
    again = claim(PROJECT, "U1", "gave-up", why="stuck again")
    failed = _t("U1", "failed", "working", "gave-up", cause=gave_up.id)
    decided: dict[str, Any] = dict(
        project=PROJECT, actor=SYSTEM, slice="S1", unit="U1", failure=failed.id,
        ended_by="gave-up", from_rung=1, why="w",
    )  # fmt: skip
    refused = RetryDecided(retry=False, to_rung=1, **decided)
    granted = RetryDecided(retry=True, to_rung=2, **decided)

    def log(*events: Event) -> list[Event]:
        return [*planned, *events]

    cases = {
        "planned-to-done": (log(_t("U1", "done", None, "merged")), "not in the table"),
        "claim-sets-ready": (
            log(start, working, _t("U1", "working", "working", "commit", ready=True)),
            "only gate results make a unit ready",
        ),
        "wrong-prior": (
            log(start, working, block, _t("U1", "blocked", None, "blocked", cause=block.id)),
            "says prior=None",
        ),
        "out-of-terminal": (
            log(
                start,
                working,
                _t("U1", "lost", "working", "heartbeat-lapse"),
                _t("U1", "working", "lost", "started", cause=start.id),
            ),
            "lost -> working",
        ),
        "report-answered-twice": (
            log(start, working, _t("U1", "working", None, "started", cause=start.id)),
            "answered twice",
        ),
        "builder-transitions": (
            log(start, _t("U1", "working", None, "started", cause=start.id, actor=builder)),
            "only the system",
        ),
        "restart-from-own-block": (
            log(
                start,
                working,
                block,
                _t("U1", "blocked", "working", "blocked", cause=block.id),
                _t("U1", "working", "blocked", "started", cause=start.id),
            ),
            "not a hold",
        ),
        "merged-unready": (
            log(start, working, _t("U1", "done", "working", "merged")),
            "not ready",
        ),
        "unblocked-from-planned": (
            log(_t("U1", "working", None, "unblocked")),
            "not in the table",
        ),
        "unattributed": (log(_t("U1", "working", None, None)), "not in the table"),
        "cause-of-another-kind": (
            log(block, _t("U1", "working", None, "started", cause=block.id)),
            "its cause is not a started report",
        ),
        "revived-without-a-granted-retry": (
            log(
                start,
                working,
                failed,
                refused,
                _t("U1", "working", "failed", "retried", cause=refused.id),
            ),
            "not a retry granted for this unit",
        ),
        "revived-twice-on-one-retry": (
            log(
                start,
                working,
                failed,
                granted,
                _t("U1", "working", "failed", "retried", cause=granted.id),
                again,
                _t("U1", "failed", "working", "gave-up", cause=again.id),
                _t("U1", "working", "failed", "retried", cause=granted.id),
            ),
            f"retry {granted.id} answered twice",
        ),
    }
    return [pytest.param(events, problem, id=name) for name, (events, problem) in cases.items()]


@pytest.mark.parametrize(("events", "problem"), _forbidden_logs())
def test_the_audit_finds_a_forbidden_transition(events: list[Event], problem: str) -> None:
    """The audit reports each kind of forbidden transition in a hand-made log."""
    found = audit(events)
    assert found, "the audit missed a forbidden transition"
    assert any(problem in v.problem for v in found), found


@pytest.mark.parametrize("seed", [7, 2024])
async def test_random_claims_through_the_real_daemons_keep_the_table(
    bus: Bus, nats_url: str, project: str, seed: int
) -> None:
    """A random burst of claims through the real daemons leaves a log the audit passes."""
    rng = random.Random(seed)
    await plan(bus, project, {"S1": UNITS, "S2": ["U9"]})
    question = FindingRaised(
        project=project,
        actor=Actor(role="builder", principal="b"),
        producer="builder",
        target=parse_target("plan:S1"),
        severity="low",
        message="?",
    )
    await bus.publish(question)
    subjects = [*SUBJECTS, question.id]
    blocks = [(r, question.id if s == OPEN_FINDING else s) for r, s in VALID_BLOCKS]
    script = []
    for _ in range(80):
        block = (
            rng.choice(blocks)
            if rng.random() < 0.6
            else (
                rng.choice(REASONS),
                rng.choice(subjects),
            )
        )
        step = (
            "report",
            rng.choice([*UNITS, *UNITS, "U4"]),
            rng.choice(["started"] * 2 + ["blocked", "unblocked", "commit"] * 3 + ["gave-up"]),
            block,
            rng.choice(SHAS),
            rng.choice(["", "stuck", "stuck"]),
            rng.choice(ROLES),
        )
        script.append(_report(step, project))
    async with units_daemon(nats_url, project):
        for report in script:
            await bus.publish(report)
        await wait_log(bus, project, all_answered(script), timeout=60)
    connection = await connect(nats_url)
    try:
        dog = Watchdog(connection, Limits(lapse_s=1.0, wait_budget_s=1.0), projects=[project])
        kernel = Kernel(connection, dog)
        await dog.start(kernel)
        follower = asyncio.create_task(kernel.follow())
        await asyncio.wait_for(kernel.reached_end.wait(), 15)
        await kernel.act_on(project, now=datetime.now(UTC) + timedelta(hours=1))
        await cancel_all([follower, *kernel.sensors])
    finally:
        await connection.close()
    events = await log_events(bus, project)
    assert audit(events) == []
    assert units_fold.FOLD.fold(events).claims == {}
    moved = [e for e in events if isinstance(e, UnitTransitioned)]
    assert moved, "the random script moved nothing: it exercised no transition"
