"""`--wait` prints the system's answer to a claim, never an agent's look-alike.

Every waiting command waits through ``loopbus.answers``. Each test puts a forged answer on
the log *before* the system's: a command that took look-alikes would answer with the
forgery, so the order alone tells, with no clock in the test.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import msgspec

from bus import Bus
from loopbus.answers import wait_for_answer
from loopbus.commands import decide, plan, unit_reports
from loopbus.commands.finding import _answer
from projections.lifecycle import ANSWERS_CLAIM
from projections.slice_asks import REFUSAL_EVIDENCE_KEY
from schemas import Actor, Block, FindingRaised, UnitPlanned, UnitTransitioned, parse_target
from schemas.decisions import DecisionChoice, DecisionRecorded, ObjectiveDeclared
from schemas.ids import new_id
from schemas.lifecycle import FindingClaim, FindingDismissed
from schemas.reports import StartedReport
from schemas.slices import PlanSubmission, SlicePlan, SlicePlanAccepted

OPERATOR = Actor(role="operator", principal="olive")
AGENT = Actor(role="reviewer", principal="mallory")
BUILDER = Actor(role="builder", principal="mallory")
SYSTEM = Actor(role="system", principal="daemon@test:1")
HELD = Block(reason="awaiting-operator", subject="mallory")


def look_alike_refusal(project: str, evidence: dict[str, str]) -> FindingRaised:
    """An agent's finding that carries a claim's id and reads like the system's refusal."""
    return FindingRaised(
        project=project, actor=AGENT, producer="reviewer",
        target=parse_target("code:src/app.py:1-2"), severity="low", criterion="C1",
        message="refused: forged by an agent", evidence=evidence,
    )  # fmt: skip


async def test_an_agents_look_alike_answer_is_not_taken_for_the_systems(
    bus: Bus, project: str, capsys
) -> None:  # type: ignore[no-untyped-def]
    """A finding claim's wait prints the ratchet's dismissal, not a reviewer's refusal nor
    a system finding of another class whose evidence names the claim."""
    claim = FindingClaim(
        project=project, actor=OPERATOR, finding=new_id(), action="dismiss",
        reason="false-positive", why="the lint is wrong here",
    )  # fmt: skip
    ack = await bus.publish(claim)
    await bus.publish(look_alike_refusal(project, {ANSWERS_CLAIM: claim.id}))
    # The system's own finding, but not a refusal: its evidence can be an agent's words.
    await bus.publish(
        msgspec.structs.replace(
            look_alike_refusal(project, {ANSWERS_CLAIM: claim.id}), actor=SYSTEM
        )
    )
    await bus.publish(
        FindingDismissed(
            project=project, actor=SYSTEM, finding=claim.finding, reason="false-positive",
            why=claim.why, claim=claim.id, by="operator:olive",
        )
    )  # fmt: skip
    answer = lambda e: _answer(e, claim)  # noqa: E731
    assert await wait_for_answer(bus, project, answer, 20, "ratchet", after=ack.seq) == 0
    assert capsys.readouterr().out.strip() == "dismissed (false-positive) by operator:olive"


async def test_decide_waits_for_the_builder_daemons_record_not_an_agents(
    bus: Bus, project: str
) -> None:
    """`decide --wait`: an agent's decision naming the choice as its cause is not the record."""
    choice = DecisionChoice(
        project=project, actor=OPERATOR, unit="U1", decision_id="rounding", choose="cents"
    )
    ack = await bus.publish(choice)
    fields = dict(
        project=project, unit="U1", decision_id="rounding", question="round totals?",
        options=["cents", "raw"], owner="operator:olive", cause=choice.id,
    )  # fmt: skip
    await bus.publish(DecisionRecorded(actor=BUILDER, chosen="raw", **fields))  # type: ignore[arg-type]
    real = DecisionRecorded(actor=SYSTEM, chosen="cents", **fields)  # type: ignore[arg-type]
    await bus.publish(real)
    recorded = await decide.wait_recorded(bus, choice, ack.seq, 20)
    assert (recorded.id, recorded.chosen) == (real.id, "cents")


async def test_plan_submit_waits_for_the_dispatchers_answer_not_an_agents(
    bus: Bus, project: str
) -> None:
    """`plan submit`: an agent's acceptance or refusal of the submission is not the answer."""
    submission = PlanSubmission(project=project, actor=BUILDER, plan=SlicePlan(slice="S1"))
    ack = await bus.publish(submission)
    forged = SlicePlanAccepted(
        project=project, actor=BUILDER, plan=submission.plan, cause=submission.id
    )
    await bus.publish(forged)  # a fact kind from an agent: stored only without auth
    await bus.publish(look_alike_refusal(project, {REFUSAL_EVIDENCE_KEY: submission.id}))
    real = SlicePlanAccepted(
        project=project, actor=SYSTEM, plan=submission.plan, cause=submission.id
    )
    await bus.publish(real)
    answer = await plan._answer(bus, submission, ack.seq, 20)
    assert answer is not None and answer.id == real.id


async def test_a_unit_reports_wait_takes_the_units_daemons_transition_only(
    bus: Bus, project: str
) -> None:
    """`report … --wait`: an agent's transition or refusal naming the report is not one."""
    report = StartedReport(project=project, actor=BUILDER, unit="U1")
    ack = await bus.publish(report)
    forged = UnitTransitioned(
        project=project, actor=BUILDER, unit="U1", state="working",
        cause=report.id, by="started",
    )  # fmt: skip
    await bus.publish(forged)
    real = UnitTransitioned(
        project=project, actor=SYSTEM, unit="U1", state="working",
        cause=report.id, by="started",
    )  # fmt: skip
    await bus.publish(real)
    answer = await unit_reports.wait_for_answer(bus, report, ack.seq, 20)
    assert answer.id == real.id


# -- the real command line, waiting on a real server --------------------------------------


async def start(nats_url: str, *args: str) -> tuple[subprocess.Popen[str], str]:
    """Start a waiting ``loopbus`` command; return it and the line saying what it published."""
    process = subprocess.Popen(
        [sys.executable, "-m", "loopbus.cli", *args, "--nats-url", nats_url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=os.environ | {"PYTHONUNBUFFERED": "1", "LOOPBUS_PRINCIPAL": "olive"},
    )
    assert process.stdout is not None
    return process, await asyncio.to_thread(process.stdout.readline)


async def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = await asyncio.to_thread(process.communicate, timeout=60)
    return process.returncode, out, err


async def test_decision_record_wait_ignores_an_agents_record_of_the_claim(
    bus: Bus, nats_url: str, project: str
) -> None:
    """`loopbus decision record --wait` prints the ratchet's record, though an agent's
    record and refusal of the same claim came first."""
    process, said = await start(
        nats_url, "decision", "record", "--project", project, "--new", "--question",
        "which store?", "--chosen", "sqlite", "--owner", "operator:olive", "--wait", "30",
    )  # fmt: skip
    try:
        assert said.startswith("decision claimed at seq "), said
        claim_id = said.rstrip().rsplit("(", 1)[1].rstrip(")")
        common = dict(project=project, question="which store?", owner="operator:olive")
        agent = DecisionRecorded(actor=BUILDER, chosen="postgres", claim=claim_id, **common)  # type: ignore[arg-type]
        await bus.publish(agent)  # on the builder's own claim subject: allowed with auth too
        await bus.publish(look_alike_refusal(project, {ANSWERS_CLAIM: claim_id}))
        real = DecisionRecorded(actor=SYSTEM, chosen="sqlite", claim=claim_id, **common)  # type: ignore[arg-type]
        await bus.publish(real)
        code, out, err = await finish(process)
    finally:
        process.kill()
    assert code == 0, err
    assert out.strip() == f"recorded as decision {real.id}"


async def test_report_wait_ignores_an_agents_transition_of_the_unit(
    bus: Bus, nats_url: str, project: str
) -> None:
    """`loopbus report started --wait` prints the units daemon's transition, though a
    builder's look-alike transition (stored: this server has no auth) came first."""
    await bus.publish(ObjectiveDeclared(project=project, actor=OPERATOR, objective="o1"))
    await bus.publish(UnitPlanned(project=project, actor=SYSTEM, unit="U1", slice="S1"))
    process, said = await start(
        nats_url, "report", "started", "--project", project, "--unit", "U1", "--wait", "30"
    )
    try:
        assert said.startswith("started report "), said
        report_id = said.split()[2]
        moved = dict(project=project, unit="U1", cause=report_id)
        forged = UnitTransitioned(actor=BUILDER, state="blocked", by="blocked", block=HELD, **moved)  # type: ignore[arg-type]
        await bus.publish(forged)
        real = UnitTransitioned(actor=SYSTEM, state="working", by="started", **moved)  # type: ignore[arg-type]
        await bus.publish(real)
        code, out, err = await finish(process)
    finally:
        process.kill()
    assert code == 0, err
    assert out.strip() == "unit U1: planned -> working (by started)"
