"""The investigator: exactly one investigation on the second failure of anything — not on
the first, not twice, not again after a restart — with a scripted investigator command."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from reviewkit import (
    SYSTEM,
    GateSigner,
    Scripted,
    config_of,
    count,
    of,
    running,
    sandbox_for,
    setup_repo,
    wait_log,
)

from bus import Bus
from projections import ratchet
from projections.investigations import error_signature
from schemas import Actor, Event, FindingRaised, Outcome, UnitTransitioned
from schemas.ratchet import GateMoveClaim, GateMoved, GateProposed
from schemas.reviews import InvestigationCompleted, InvestigationRequested, RoundClosed
from schemas.targets import CheckTarget
from workers.investigator.daemon import Investigator
from workers.ratchet.daemon import Ratchet
from workers.ratchet.policy import policy_for

REPORT = {
    "stdout": {
        "summary": "the fixture never creates the totals table",
        "severity": "high",
        "evidence": {"suspect": "tests/conftest.py"},
    }
}


def failing_round(project: str, unit: str, n: int, **fields: Any) -> RoundClosed:
    values: dict[str, Any] = {
        "project": project, "actor": SYSTEM, "unit": unit, "round": n, "head": "a" * 40,
        "finding_keys": ["code:a.py:1-1|high|C1"], "blocking_keys": ["code:a.py:1-1|high|C1"],
        "failure_signature": "s", "diff_digest": f"d{n}", "passed": False,
        "convergence": "first" if n == 1 else "converging", "action": "continue", "cause": "c",
    }  # fmt: skip
    values.update(fields)
    return RoundClosed(**values)


def failed(project: str, unit: str, cause: str | None = None, state: str = "failed") -> Event:
    outcome = Outcome(summary="gave up: no progress", ended_by="report")
    return UnitTransitioned(
        project=project, actor=SYSTEM, unit=unit, state=state, prior="working",  # type: ignore[arg-type]
        by="gave-up" if state == "failed" else "heartbeat-lapse", outcome=outcome, cause=cause,
    )  # fmt: skip


def trunk_red(project: str, interface: str, *more: str, again: bool = False) -> FindingRaised:
    """The merger's finding for a red trunk (``again``: its contract-wrong promotion)."""
    return FindingRaised(
        project=project, actor=SYSTEM, producer="trunk_gate", target=CheckTarget(check="tests"),
        severity="high", criterion="trunk-green", cls="contract-wrong" if again else "trunk-red",
        message="trunk went red", evidence={"interface": [interface, *more], "why": "red-again"},
    )  # fmt: skip


def investigations(events: list[Event], trigger: str) -> tuple[list[Any], list[Any]]:
    return (
        of(InvestigationRequested, events, trigger=trigger),
        of(InvestigationCompleted, events, trigger=trigger),
    )


async def sentinel(bus: Bus, project: str, name: str) -> list[Event]:
    """Two trunk-red failures on interface ``name`` and their investigation: once it is on
    the log, the daemon has handled everything published before (it acts in log order)."""
    await bus.publish(trunk_red(project, name))
    await bus.publish(trunk_red(project, name, again=True))
    return await wait_log(bus, project, count(InvestigationCompleted, trigger=f"trunk-red:{name}"))


@pytest.fixture
def agent(agent_dir: Path) -> Scripted:
    scripted = Scripted(agent_dir, name="investigator")
    scripted.plan([REPORT])
    return scripted


def investigated_repo(tmp_path: Path, project: str, agent: Scripted, **table: Any) -> Any:
    return setup_repo(tmp_path, project, None, investigator={"command": agent.command, **table})


async def test_one_investigation_on_the_second_failure_not_the_first_nor_the_third(
    bus: Bus, project: str, tmp_path: Path, agent: Scripted
) -> None:
    """A unit's first failure dispatches nothing; its second dispatches one investigation
    whose finding is linked to the failures; a third adds nothing."""
    repo = investigated_repo(tmp_path, project, agent)
    first = failing_round(project, "U1", 1)
    second = failed(project, "U1")
    async with running(bus, Investigator(config_of(repo))):
        await bus.publish(first)
        events = await sentinel(bus, project, "api-a")
        assert investigations(events, "unit-failed:U1") == ([], [])
        await bus.publish(second)
        events = await wait_log(
            bus, project, count(InvestigationCompleted, trigger="unit-failed:U1")
        )
        await bus.publish(failed(project, "U1", state="lost"))
        events = await sentinel(bus, project, "api-b")
    (request,), (completed,) = investigations(events, "unit-failed:U1")
    assert request.failures == [first.id, second.id]
    (finding,) = of(FindingRaised, events, id=completed.finding)
    assert (finding.cls, finding.producer, finding.severity) == (
        "investigation",
        "meta_rule",
        "high",
    )
    assert finding.message == "the fixture never creates the totals table"
    assert format(finding.target.id) == second.id  # type: ignore[union-attr]
    assert finding.evidence["trigger"] == "unit-failed:U1"
    assert finding.evidence["investigation"] == request.id
    assert finding.evidence["failures"] == [first.id, second.id]
    assert finding.evidence["suspect"] == "tests/conftest.py"
    assert (finding.unit, finding.owner) == ("U1", "operator")
    calls = [c for c in agent.calls() if c["doc"]["trigger"] == "unit-failed:U1"]
    assert len(calls) == 1
    assert [f["event"] for f in calls[0]["doc"]["failures"]] == [first.id, second.id]


async def test_a_halt_caused_by_a_counted_round_is_the_same_failure(
    bus: Bus, project: str, tmp_path: Path, agent: Scripted
) -> None:
    """The FAILED transition a halting round causes is not a second failure of the unit."""
    repo = investigated_repo(tmp_path, project, agent)
    halting = failing_round(project, "U2", 1, action="halted", ended_by="halted")
    async with running(bus, Investigator(config_of(repo))):
        await bus.publish(halting)
        await bus.publish(failed(project, "U2", cause=halting.id))
        events = await sentinel(bus, project, "api")
    assert investigations(events, "unit-failed:U2") == ([], [])


@pytest.mark.parametrize(
    ("errors", "investigated"),
    [
        pytest.param(
            [
                "timed out after 300s in /tmp/loopbus-gate-x1/tree",
                "timed out after 301.5s in /tmp/loopbus-gate-y2/tree",
            ],
            True,
            id="same-signature",
        ),
        pytest.param(
            ["could not start: ruff: No such file", "collection error in tests/test_x.py"],
            False,
            id="different-signatures",
        ),
    ],
)
async def test_a_gate_erroring_twice_with_one_signature(
    bus: Bus, project: str, tmp_path: Path, agent: Scripted, errors: list[str], investigated: bool
) -> None:
    """Two errors of one check with the same signature (volatile parts aside) are one
    trigger; two different errors are two first failures."""
    repo = investigated_repo(tmp_path, project, agent)
    signer = GateSigner()
    async with running(bus, Investigator(config_of(repo))):
        for n, error in enumerate(errors):
            commit = f"{n}" * 40
            await bus.publish(signer.result(project, "lint", commit, "error", [], error=error))
        events = await sentinel(bus, project, "api")
    triggers = {e.trigger for e in of(InvestigationRequested, events)} - {"trunk-red:api"}
    expected = {f"gate-error:{error_signature('lint', errors[0])}"} if investigated else set()
    assert triggers == expected


async def test_an_investigator_stopped_at_a_sandbox_limit_is_a_breach_finding(
    bus: Bus, project: str, tmp_path: Path, agent: Scripted
) -> None:
    """An investigator command that spins past ``[agents] cpu_time`` is killed by the
    sandbox: the investigation completes with its error, and the sandbox's observation is
    a ``sandbox-breach`` finding published with that completion."""
    agent.plan([{"spin": True, **REPORT}])
    agents = {**(sandbox_for(agent.command) or {}), "cpu_time": "1s"}
    repo = setup_repo(
        tmp_path, project, None, investigator={"command": agent.command}, agents=agents
    )
    async with running(bus, Investigator(config_of(repo))):
        events = await sentinel(bus, project, "orders")
    (request,), (completed,) = investigations(events, "trunk-red:orders")
    assert completed.outcome == "error"
    (breach,) = [f for f in of(FindingRaised, events) if f.cls == "sandbox-breach"]
    assert (breach.producer, breach.actor.role, breach.owner) == (
        "meta_rule",
        "system",
        "operator",
    )
    assert breach.target.id == request.id  # type: ignore[union-attr]
    assert breach.evidence["breaches"] == ["cpu"] and breach.evidence["role"] == "investigator"
    assert "investigator" in breach.message and "cpu" in breach.message


async def test_restarted_mid_investigation_it_completes_once(
    bus: Bus, project: str, tmp_path: Path, agent: Scripted, agent_dir: Path
) -> None:
    """Stopped while its command runs, the next daemon finishes the same investigation:
    one request and one completion; a later daemon over the same log adds nothing."""
    fifo = agent_dir / "started.fifo"
    os.mkfifo(fifo)
    fifo.chmod(0o666)
    agent.plan([{"stdout": "", "fifo": str(fifo)}, REPORT])
    repo = investigated_repo(tmp_path, project, agent)
    async with running(bus, Investigator(config_of(repo))):
        await bus.publish(trunk_red(project, "orders"))
        await bus.publish(trunk_red(project, "orders"))
        line = await asyncio.wait_for(asyncio.to_thread(_read_line, fifo), 30)
        assert line == "started\n"
    async with running(bus, Investigator(config_of(repo))):
        events = await wait_log(bus, project, count(InvestigationCompleted))
    async with running(bus, Investigator(config_of(repo))):
        await bus.publish(trunk_red(project, "orders"))
        events = await sentinel(bus, project, "api")
    requests, completions = investigations(events, "trunk-red:orders")
    assert (len(requests), len(completions)) == (1, 1)
    assert len(agent.calls()) == 3  # killed run, finishing run, and the sentinel's


def _read_line(path: Path) -> str:
    with path.open() as fh:
        return fh.readline()


@pytest.mark.parametrize(
    ("step", "outcome", "cls", "message"),
    [
        pytest.param(
            {"stdout": "The migration runs before the table exists.\n"},
            "finding",
            "investigation",
            "The migration runs before the table exists.",
            id="plain-text",
        ),
        pytest.param(
            {"stdout": "", "exit": 2, "stderr": "no model\n"},
            "error",
            "meta",
            "exited with code 2: no model",
            id="non-zero-exit",
        ),
        pytest.param(
            {"stdout": {"summary": "x", "verdict": "approve"}},
            "error",
            "meta",
            "wrong report schema",
            id="wrong-schema",
        ),
    ],
)
async def test_what_the_investigator_printed_becomes_one_finding(
    bus: Bus,
    project: str,
    tmp_path: Path,
    agent: Scripted,
    step: dict[str, Any],
    outcome: str,
    cls: str,
    message: str,
) -> None:
    """Plain text is the finding's message; a failed run is a finding about the machinery,
    and either way the trigger is investigated once (a failure is not retried)."""
    agent.plan([step])
    repo = investigated_repo(tmp_path, project, agent)
    async with running(bus, Investigator(config_of(repo))):
        await bus.publish(trunk_red(project, "billing"))
        await bus.publish(trunk_red(project, "billing"))
        events = await wait_log(bus, project, count(InvestigationCompleted))
    (completed,) = of(InvestigationCompleted, events)
    (finding,) = of(FindingRaised, events, id=completed.finding)
    assert (completed.outcome, finding.cls) == (outcome, cls)
    assert message in finding.message
    assert finding.owner == ("planner" if outcome == "finding" else "standards")


async def test_a_project_without_an_investigator_command_is_left_alone(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    """No [investigator] command: the daemon serves nothing for that project."""
    repo = setup_repo(tmp_path, project, None)
    from workers.agents.cli import serving_body
    from workers.runtime import DaemonContext

    daemon = Investigator(config_of(repo))
    assert daemon.configs == {} and daemon.projects == ()
    ctx = DaemonContext(bus=bus, name="idle")
    ctx.stop.set()
    await asyncio.wait_for(serving_body(daemon, "no investigator command")(ctx), 10)


async def test_trunk_red_again_on_a_shared_test_is_the_same_interface(
    bus: Bus, project: str, tmp_path: Path, agent: Scripted
) -> None:
    """Reds sharing a failing test are one interface (as the merger judges it); a red on
    other tests is a different one and a first failure."""
    repo = investigated_repo(tmp_path, project, agent)
    async with running(bus, Investigator(config_of(repo))):
        await bus.publish(trunk_red(project, "tests/test_a.py::t1", "tests/test_a.py::t2"))
        await bus.publish(trunk_red(project, "tests/test_z.py::t9"))
        await bus.publish(trunk_red(project, "tests/test_a.py::t2", again=True))
        events = await wait_log(bus, project, count(InvestigationCompleted))
        events = await sentinel(bus, project, "api")
    requested = of(InvestigationRequested, events, trigger_kind="trunk-red")
    assert sorted(r.trigger for r in requested) == [
        "trunk-red:api",
        "trunk-red:tests/test_a.py::t1,tests/test_a.py::t2",
    ]


GATE_REPORT = {
    "stdout": {
        "summary": "the orders fixture never creates its table",
        "gate": {
            "gate": "fixture-tables",
            "check": "python -m pytest -q tests/test_fixtures.py",
            "defect": "a fixture that never creates the table it reads",
        },
    }
}
RESET_REPORT = {  # a report proposing a gate that is already in force: it would reset it
    "stdout": {
        "summary": "tests are flaky",
        "gate": {"gate": "tests", "check": "python -m pytest -q", "defect": "flaky tests"},
    }
}


async def test_an_investigation_that_proposes_a_gate_drafts_it_for_the_operator(
    bus: Bus, project: str, tmp_path: Path, agent: Scripted
) -> None:
    """A report proposing a gate becomes a draft claim the ratchet daemon settles into a
    Drafted gate (advisory, owned by the project operator, its check and defect kept);
    a builder can neither forge the fact that approves it nor claim the approval; the
    operator approves it. A proposal naming a gate already in force is refused, so an
    investigator cannot send a blocking gate back to Drafted."""
    agent.plan([GATE_REPORT, RESET_REPORT])
    repo = investigated_repo(tmp_path, project, agent)
    rules = policy_for(repo.path, f"{project}cat", [])
    builder = Actor(role="builder", principal="b1")
    async with (
        running(bus, Investigator(config_of(repo))),
        running(bus, Ratchet(rules, projects=[project, f"{project}cat"])),
    ):
        await bus.publish(trunk_red(project, "orders"))
        await bus.publish(trunk_red(project, "orders", again=True))
        events = await wait_log(bus, project, count(GateMoved, gate="fixture-tables"))
        (claim,) = of(GateProposed, events, gate="fixture-tables")
        (drafted,) = of(GateMoved, events, gate="fixture-tables")
        (completed,) = of(InvestigationCompleted, events, trigger="trunk-red:orders")
        assert claim.actor.role == "system"
        assert (claim.investigation, claim.finding) == (completed.request, completed.finding)
        assert (drafted.source, drafted.target, drafted.claim) == (None, "Drafted", claim.id)
        view = ratchet.FOLD.fold(events).gates["local:fixture-tables"]
        assert (view.state, view.owner) == ("Drafted", "operator")
        assert view.defect == "a fixture that never creates the table it reads"
        assert view.checks == ["python -m pytest -q tests/test_fixtures.py"]
        assert not ratchet.blocks(view)
        forged = GateMoved(
            project=project, actor=builder, gate="fixture-tables", scope="local",
            move="approve", source="Drafted", target="Local", claim=claim.id, authority="x",
        )  # fmt: skip
        await bus.publish(forged)
        await bus.publish(GateMoveClaim(project=project, actor=builder, gate="fixture-tables",
                                        scope="local", move="approve",
                                        why="my own gate"))  # fmt: skip
        events = await wait_log(bus, project, count(FindingRaised, cls="refused-transition"))
        assert (
            "settled by the project operator"
            in of(FindingRaised, events, cls="refused-transition")[0].message
        )
        assert ratchet.FOLD.fold(events).gates["local:fixture-tables"].state == "Drafted"
        approve = GateMoveClaim(project=project, actor=Actor(role="operator", principal="op"),
                                gate="fixture-tables", scope="local", move="approve",
                                why="it would have caught orders")  # fmt: skip
        await bus.publish(approve)
        events = await wait_log(bus, project, count(GateMoved, claim=approve.id))
        view = ratchet.FOLD.fold(events).gates["local:fixture-tables"]
        assert (view.state, view.owner) == ("Local", "") and ratchet.blocks(view)
        await bus.publish(GateProposed(project=project, actor=builder, gate="mine", check="true",
                                       defect="none", investigation=completed.request,
                                       finding=completed.finding, why="forged"))  # fmt: skip
        await bus.publish(trunk_red(project, "billing"))
        await bus.publish(trunk_red(project, "billing", again=True))
        events = await wait_log(bus, project, count(FindingRaised, 2, cls="refused-transition"))
    (reset,) = of(GateProposed, events, gate="tests")
    refusal = of(FindingRaised, events, cls="refused-transition")[1]
    assert refusal.evidence.get("claim") == reset.id
    assert "draft is no edge of the ratchet from Local" in refusal.message
    assert of(GateMoved, events, gate="tests") == of(GateMoved, events, gate="mine") == []
    assert ratchet.FOLD.fold(events).gates.get("local:tests") is None
