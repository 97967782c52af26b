"""A builder round that changes nothing spends a rung instead of failing the unit, and the
decisions in force that bear on a unit (by file or criterion) travel in its brief — on a
real server, with the real units and builder daemons and a real repository."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builderkit import SYSTEM, ScriptedBuilder, configs, daemons, dispatch, of, setup, wait_log

from bus import Bus
from projections.claims import Move, transition_event
from schemas import Actor, UnitTransitioned
from schemas.decisions import DecisionRecorded
from schemas.ids import new_id
from schemas.reports import CommitReport, GaveUpReport
from schemas.reviews import RoundUnchanged, RungPromoted

IMPLEMENTED = {"src/app.py": "def total(xs):\n    return sum(xs)\n"}
LAZY = {"stdout": {"status": "completed", "summary": "all done"}}
"""An answer that writes nothing."""


def moved(unit: str, **fields: Any) -> Any:
    return lambda events: of(UnitTransitioned, events, unit=unit, **fields)


async def test_a_round_that_changed_nothing_spends_a_rung_and_the_next_brief_says_so(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """A `completed` answer that left the worktree as it found it does not fail the unit: the
    round is recorded as unchanged, the unit climbs to rung 2, and its next round runs at
    once with a brief that says what happened; that round's change is committed."""
    agent = ScriptedBuilder(tmp_path / "agent")
    agent.plan([LAZY, {"write": IMPLEMENTED}])
    repo, base = setup(tmp_path, project, agent.command)
    async with daemons(nats_url, project, configs(repo, project, agent.command), tmp_path / "data"):
        await dispatch(bus, project, "U1", base)
        events = await wait_log(bus, project, moved("U1", by="commit"))
    assert of(GaveUpReport, events) == [] and not of(UnitTransitioned, events, state="failed")
    [unchanged] = of(RoundUnchanged, events)
    assert (unchanged.round, unchanged.rung, unchanged.to_rung) == (1, 1, 2)
    assert (unchanged.status, unchanged.summary) == ("completed", "all done")
    [promoted] = of(RungPromoted, events)
    assert (promoted.from_rung, promoted.to_rung, promoted.cause) == (1, 2, unchanged.id)
    first, second = (call["brief"] for call in agent.calls())
    assert (first["rung"], first["problem"]) == (1, "")
    assert second["rung"] == 2 and second["tactic"].startswith("diagnose")
    assert second["problem"].startswith("your last round changed nothing")
    assert "all done" in second["problem"] and "rung 1 is spent" in second["problem"]
    assert second["base"] == base  # nothing was committed: it starts where round 1 did
    [commit] = of(CommitReport, events)
    assert commit.sha != base


async def test_a_round_that_changed_nothing_on_the_last_rung_halts_the_unit(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """On rung 4 there is no rung left to spend: a round that changed nothing halts the
    unit, and its outcome says the ladder is spent."""
    agent = ScriptedBuilder(tmp_path / "agent")
    agent.plan([LAZY])
    repo, base = setup(tmp_path, project, agent.command)
    async with daemons(nats_url, project, configs(repo, project, agent.command), tmp_path / "data"):
        await bus.publish(
            RungPromoted(
                project=project, actor=SYSTEM, unit="U1", from_rung=1, to_rung=4,
                tactic="narrow", why="earlier rounds", cause=new_id(),
            )
        )  # fmt: skip
        await dispatch(bus, project, "U1", base)
        events = await wait_log(bus, project, moved("U1", state="failed"))
    [unchanged] = of(RoundUnchanged, events)
    assert (unchanged.rung, unchanged.to_rung) == (4, 5)
    [failed] = of(UnitTransitioned, events, unit="U1", state="failed")
    assert failed.by == "halted" and failed.outcome is not None
    assert failed.outcome.ended_by == "halted" and "ladder is spent" in failed.outcome.summary
    assert len(agent.calls()) == 1


def decision_record(**fields: Any) -> DecisionRecorded:
    return DecisionRecorded(
        project=fields.pop("project"), actor=SYSTEM, question="which sum?",
        options=["builtin", "loop"], owner="operator:olive", files=["src/"], **fields,
    )  # fmt: skip


async def test_a_decision_bearing_on_the_units_file_reaches_its_brief_until_superseded(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """A decision recorded for another unit whose files include this unit's file is in this
    unit's brief; once superseded it leaves the brief, its successor is in, and the next
    round is told what was superseded. A decision on other files never reaches it."""
    agent = ScriptedBuilder(tmp_path / "agent")
    agent.plan(
        [{"write": {"src/app.py": "def total(xs):\n    return 1\n"}}, {"write": IMPLEMENTED}]
    )
    repo, base = setup(tmp_path, project, agent.command)
    first = decision_record(project=project, chosen="builtin", unit="UA", rationale="fast")
    elsewhere = DecisionRecorded(
        project=project, actor=SYSTEM, question="which font?", chosen="serif",
        owner="operator:olive", files=["docs/"],
    )  # fmt: skip
    async with daemons(nats_url, project, configs(repo, project, agent.command), tmp_path / "data"):
        await bus.publish(first)
        await bus.publish(elsewhere)
        await dispatch(bus, project, "U1", base)
        events = await wait_log(bus, project, moved("U1", by="commit"))
        later = decision_record(project=project, chosen="loop", supersedes=first.id)
        await bus.publish(later)
        [head] = of(CommitReport, events)
        returned = Move("U1", "working", "working", "returned", commit=head.sha)
        await bus.publish(
            transition_event(returned, project, Actor(role="system", principal="r"), new_id())
        )
        events = await wait_log(bus, project, lambda es: len(of(CommitReport, es)) >= 2)
    one, two = (call["brief"] for call in agent.calls())
    assert one["decisions"] == [
        {"decision_id": first.id, "question": "which sum?", "chosen": "builtin",
         "by": "operator:olive", "rationale": "fast"}
    ]  # fmt: skip
    assert one["superseded"] == []
    assert [d["chosen"] for d in two["decisions"]] == ["loop"]
    assert two["superseded"] == [
        {"decision_id": first.id, "question": "which sum?", "chosen": "builtin",
         "superseded_by": later.id}
    ]  # fmt: skip
