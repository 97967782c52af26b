"""The builder daemon on a real server, with the real units daemon and a real repository."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builderkit import ScriptedBuilder, configs, daemons, dispatch, of, setup, wait_log
from dulwich.repo import Repo

from bus import HEARTBEAT_BUCKET, Bus
from projections import units as units_fold
from projections.claims import Move, transition_event
from schemas import Actor, FindingRaised, Outcome, UnitPlanned, UnitTransitioned
from schemas.decisions import (
    STATED_WEIGHT,
    DecisionChoice,
    DecisionRecorded,
    DecisionRequested,
)
from schemas.ids import new_id
from schemas.reports import (
    BlockedReport,
    CommitReport,
    GaveUpReport,
    StartedReport,
    decode_heartbeat,
)
from schemas.slices import UsageReport

MERGED = Outcome(summary="merged", ended_by="merge")
IMPLEMENTED = {"src/app.py": "def total(xs):\n    return sum(xs)\n"}


def made_tree_entry(git: Repo, tree: bytes, path: bytes) -> tuple[int, bytes]:
    return git[tree].lookup_path(git.object_store.__getitem__, path)  # type: ignore[no-any-return,attr-defined]


def decision(confidence: str = "high", autonomy: str | None = "risky") -> dict[str, Any]:
    stated = {"autonomy": autonomy} if autonomy is not None else {}
    return stated | {
        "decision_id": "rounding",
        "question": "round totals to cents?",
        "options": [
            {"id": "cents", "summary": "round half even", "user_impact": "exact money"},
            {"id": "raw", "summary": "keep floats", "performance": "no cost"},
        ],
        "recommended_default": "cents",
        "confidence": confidence,
        "reasoning": "money is shown to people",
    }


def moved(unit: str, **fields: Any) -> Any:
    return lambda events: of(UnitTransitioned, events, unit=unit, **fields)


async def test_a_round_is_started_built_committed_and_reported(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """A dispatched unit is started, its command runs in a private worktree at the base
    with the brief on stdin, and the adapter commits the change as the roster principal
    on loopbus/<project>/<unit> and reports it; the unit's head is that commit. Its beats
    name the principal its start made the unit's holder, the one beater that counts."""
    agent = ScriptedBuilder(tmp_path / "agent")
    agent.plan(
        [{"write": IMPLEMENTED, "stdout": {"status": "completed", "summary": "sum", "tokens": 42}}]
    )
    repo, base = setup(tmp_path, project, agent.command)
    async with daemons(nats_url, project, configs(repo, project, agent.command), tmp_path / "data"):
        await dispatch(bus, project, "U1", base)
        events = await wait_log(bus, project, moved("U1", by="commit"))
    [started] = of(StartedReport, events, unit="U1")
    [commit] = of(CommitReport, events, unit="U1")
    [usage] = of(UsageReport, events, unit="U1")
    builder = Actor(role="builder", principal="b1")
    assert started.actor == commit.actor == usage.actor == builder
    assert usage.tokens == 42
    [head] = of(UnitTransitioned, events, unit="U1", by="commit")
    assert head.commit == commit.sha
    git = Repo(str(repo.path))
    made = git[commit.sha.encode()]
    assert made.parents == [base.encode()]
    assert made.author.startswith(b"b1 <")
    assert git.refs[f"refs/heads/loopbus/{project}/U1".encode()] == commit.sha.encode()
    _mode, blob = made_tree_entry(git, made.tree, b"src/app.py")
    assert git[blob].data == IMPLEMENTED["src/app.py"].encode()
    [call] = agent.calls()
    brief = call["brief"]
    assert (brief["unit"], brief["round"], brief["base"]) == ("U1", 1, base)
    assert brief["files"] == ["src/app.py"]
    assert brief["criteria"][0]["test"] == "tests/test_criteria.py::test_total"
    assert "assert total([1, 2]) == 3" in brief["criteria"][0]["text"]
    assert brief["design"] == "total adds the numbers up\n"
    # A worktree of the round's own, outside the data directory (which an agent never sees)
    cwd = Path(call["cwd"])
    assert cwd.name == "tree" and cwd.parent.name.startswith("loopbus-build-")
    assert not cwd.is_relative_to(tmp_path / "data")
    assert not any(k.startswith(("NATS", "LOOPBUS_NATS")) for k in call["env"])
    assert call["env"]["LOOPBUS_UNIT"] == "U1"
    beats = await bus.bucket(HEARTBEAT_BUCKET)
    beat = decode_heartbeat((await beats.get(f"{project}.U1")).value)
    assert beat.actor == builder
    units = units_fold.initial()
    for event in events:
        units = units_fold.apply(units, event)
    assert units.units["U1"].holder == beat.actor  # the one beater the watchdog counts


async def test_a_returned_unit_runs_another_round_from_its_head(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """A returned unit gets a second round: its worktree starts at the unit's head and the
    brief says round 2; the new commit sits on the first."""
    agent = ScriptedBuilder(tmp_path / "agent")
    agent.plan(
        [
            {"write": {"src/app.py": "def total(xs):\n    return 1\n"}},
            {"write": IMPLEMENTED},
        ]
    )
    repo, base = setup(tmp_path, project, agent.command)
    async with daemons(nats_url, project, configs(repo, project, agent.command), tmp_path / "data"):
        await dispatch(bus, project, "U1", base)
        events = await wait_log(bus, project, moved("U1", by="commit"))
        [first] = of(CommitReport, events)
        returned = transition_event(
            Move("U1", "working", "working", "returned", commit=first.sha),
            project,
            Actor(role="system", principal="test-reviewer"),
            new_id(),
        )
        await bus.publish(returned)
        events = await wait_log(bus, project, lambda es: len(of(CommitReport, es)) >= 2)
    second = of(CommitReport, events)[1]
    assert Repo(str(repo.path))[second.sha.encode()].parents == [first.sha.encode()]
    briefs = [c["brief"] for c in agent.calls()]
    assert [b["round"] for b in briefs] == [1, 2]
    assert briefs[1]["base"] == first.sha


async def test_a_malformed_envelope_is_retried_once_then_the_unit_gives_up(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """A malformed envelope is a finding naming the field and value; the retry's brief
    carries the problem; a second malformed answer fails the unit."""
    agent = ScriptedBuilder(tmp_path / "agent")
    agent.plan([{"stdout": {"status": "done"}}, {"stdout": "not json"}])
    repo, base = setup(tmp_path, project, agent.command)
    async with daemons(nats_url, project, configs(repo, project, agent.command), tmp_path / "data"):
        await dispatch(bus, project, "U1", base)
        events = await wait_log(bus, project, moved("U1", state="failed"))
    findings = of(FindingRaised, events, cls="builder-failure")
    assert 'envelope field $.status = "done"' in findings[0].message
    assert "not JSON" in findings[1].message
    [gave_up] = of(GaveUpReport, events)
    assert "no valid answer after a retry" in gave_up.why
    briefs = [c["brief"] for c in agent.calls()]
    assert briefs[0]["problem"] == "" and "$.status" in briefs[1]["problem"]


async def test_long_mode_picks_the_default_and_runs_again_with_it(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """In long mode a confident novel decision is recorded as a fact (auto, the default)
    and the builder runs again with the decision in its brief."""
    agent = ScriptedBuilder(tmp_path / "agent")
    agent.plan(
        [
            {"stdout": {"status": "completed", "novel_decisions": [decision()]}},
            {"write": IMPLEMENTED},
        ]
    )
    repo, base = setup(tmp_path, project, agent.command, mode="long")
    async with daemons(
        nats_url, project, configs(repo, project, agent.command, "long"), tmp_path / "data"
    ):
        await dispatch(bus, project, "U1", base)
        events = await wait_log(bus, project, moved("U1", by="commit"))
    [recorded] = of(DecisionRecorded, events)
    assert (recorded.chosen, recorded.by, recorded.stated_confidence) == ("cents", "auto", "high")
    assert recorded.confidence == STATED_WEIGHT["high"]
    assert recorded.actor.role == "system"
    briefs = [c["brief"] for c in agent.calls()]
    assert briefs[1]["decisions"][0]["chosen"] == "cents"


async def test_normal_mode_waits_for_the_operator_then_builds(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """In normal mode the unit blocks awaiting the operator; the operator's choice (a claim)
    becomes the recorded decision, the unit is unblocked and built with it."""
    agent = ScriptedBuilder(tmp_path / "agent")
    agent.plan(
        [
            {"stdout": {"status": "completed", "novel_decisions": [decision()]}},
            {"write": IMPLEMENTED},
        ]
    )
    repo, base = setup(tmp_path, project, agent.command)
    async with daemons(nats_url, project, configs(repo, project, agent.command), tmp_path / "data"):
        await dispatch(bus, project, "U1", base)
        events = await wait_log(bus, project, moved("U1", state="blocked"))
        [asked] = of(DecisionRequested, events)
        assert asked.routed == "operator" and asked.finding is not None
        [blocked] = of(BlockedReport, events)
        assert (blocked.reason, blocked.subject) == ("awaiting-operator", asked.finding)
        await bus.publish(
            DecisionChoice(
                project=project,
                actor=Actor(role="operator", principal="olive"),
                unit="U1",
                decision_id="rounding",
                choose="raw",
            )
        )
        events = await wait_log(bus, project, moved("U1", by="commit"))
    [recorded] = of(DecisionRecorded, events)
    assert (recorded.chosen, recorded.by) == ("raw", "operator:olive")
    briefs = [c["brief"] for c in agent.calls()]
    assert briefs[1]["decisions"][0]["chosen"] == "raw"


async def test_low_confidence_asks_the_operator_even_in_long_mode(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """A low-confidence decision is never auto-picked."""
    agent = ScriptedBuilder(tmp_path / "agent")
    agent.plan([{"stdout": {"status": "completed", "novel_decisions": [decision("low")]}}])
    repo, base = setup(tmp_path, project, agent.command, mode="long")
    async with daemons(
        nats_url, project, configs(repo, project, agent.command, "long"), tmp_path / "data"
    ):
        await dispatch(bus, project, "U1", base)
        events = await wait_log(bus, project, moved("U1", state="blocked"))
    assert of(DecisionRequested, events, routed="operator")
    assert not of(DecisionRecorded, events)


DROP_TABLE = {
    "decision_id": "legacy",
    "question": "what to do with the legacy_orders table?",
    "options": [
        {"id": "drop", "summary": "DROP TABLE legacy_orders", "cost": "frees 2 GB"},
        {"id": "keep", "summary": "leave it as it is"},
    ],
    "recommended_default": "drop",
    "confidence": "high",
    "reasoning": "nothing reads it any more",
    "autonomy": "safe",
}


async def test_long_mode_never_picks_an_irreversible_choice_alone(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """Dropping a table stated as safe at confidence high is classed irreversible by loopbus
    and waits on the operator even in long mode with every class loopbus allows."""
    agent = ScriptedBuilder(tmp_path / "agent")
    agent.plan([{"stdout": {"schema": "loopbus.envelope.v2", "status": "completed",
                            "novel_decisions": [DROP_TABLE]}}])  # fmt: skip
    every = ["safe", "risky", "decision"]
    repo, base = setup(tmp_path, project, agent.command, mode="long")
    async with daemons(
        nats_url, project, configs(repo, project, agent.command, "long", every), tmp_path / "data"
    ):
        await dispatch(bus, project, "U1", base)
        events = await wait_log(bus, project, moved("U1", state="blocked"))
    [asked] = of(DecisionRequested, events)
    assert (asked.routed, asked.autonomy, asked.stated_autonomy) == (
        "operator",
        "irreversible",
        "safe",
    )
    assert "drop" in asked.classified.lower()
    assert not of(DecisionRecorded, events)
    [finding] = of(FindingRaised, events, cls="decision-needed")
    assert "class irreversible" in finding.message


async def test_only_the_classes_the_project_allows_are_picked_alone(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """A `decision`-class choice waits on the operator under the default autonomy (safe,
    risky), and is picked alone where `[build] autonomy` lists it."""
    for allowed, routed in ((None, "operator"), (["safe", "risky", "decision"], "auto")):
        name = f"{project}-{routed}"
        agent = ScriptedBuilder(tmp_path / name / "agent")
        agent.plan([{"stdout": {"status": "completed",
                                "novel_decisions": [decision(autonomy="decision")]}}])  # fmt: skip
        repo, base = setup(tmp_path / name, name, agent.command, mode="long")
        config = configs(repo, name, agent.command, "long", allowed)
        async with daemons(nats_url, name, config, tmp_path / name / "data"):
            await dispatch(bus, name, "U1", base)
            events = await wait_log(bus, name, lambda es: of(DecisionRequested, es))
        [asked] = of(DecisionRequested, events)
        assert (asked.routed, asked.autonomy) == (routed, "decision"), allowed


async def test_the_same_decision_three_times_halts_the_unit(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """A builder that returns the same decision after it was settled, three times, is halted."""
    agent = ScriptedBuilder(tmp_path / "agent")
    agent.plan([{"stdout": {"status": "completed", "novel_decisions": [decision()]}}])
    repo, base = setup(tmp_path, project, agent.command, mode="long")
    async with daemons(
        nats_url, project, configs(repo, project, agent.command, "long"), tmp_path / "data"
    ):
        await dispatch(bus, project, "U1", base)
        events = await wait_log(bus, project, moved("U1", state="failed"))
    [halted] = of(UnitTransitioned, events, unit="U1", state="failed")
    assert halted.by == "halted" and halted.outcome is not None
    assert "rounding" in halted.outcome.summary
    assert len(of(DecisionRequested, events)) == 3


async def test_a_unit_waiting_on_a_sibling_is_built_once_the_sibling_is_done(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """needs_dependency blocks the unit awaiting the sibling it names; when the sibling is
    DONE the builder daemon unblocks it and runs the round again."""
    agent = ScriptedBuilder(tmp_path / "agent")
    agent.plan(
        [
            {"stdout": {"status": "needs_dependency", "subject": "U0", "summary": "needs U0"}},
            {"write": IMPLEMENTED},
        ]
    )
    repo, base = setup(tmp_path, project, agent.command)
    system = Actor(role="system", principal="test-merger")
    async with daemons(nats_url, project, configs(repo, project, agent.command), tmp_path / "data"):
        await bus.publish(UnitPlanned(project=project, actor=system, slice="S1", unit="U0"))
        await dispatch(bus, project, "U1", base)
        events = await wait_log(bus, project, moved("U1", state="blocked"))
        [blocked] = of(BlockedReport, events)
        assert (blocked.reason, blocked.subject) == ("awaiting-dependency", "U0")
        steps = [
            Move("U0", None, "working", "started"),
            Move("U0", "working", "working", "commit", commit=base),
            Move("U0", "working", "working", "gates", ready=True, commit=base),
            Move("U0", "working", "done", "merged", commit=base, outcome=MERGED),
        ]
        for step in steps:
            await bus.publish(transition_event(step, project, system, new_id()))
        events = await wait_log(bus, project, moved("U1", by="commit"))
    assert of(UnitTransitioned, events, unit="U1", by="unblocked")
    assert [c["brief"]["round"] for c in agent.calls()] == [1, 1]
