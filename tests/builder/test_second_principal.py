"""No auto-picked decision is final before a second principal has seen it: the decision
`long` mode picked alone is in the unit's next review input, and the reviewer lets it
stand (it is seen) or sends it to the operator (the unit waits on the operator's answer).
Real units, builder and reviewer daemons on a real server and a real repository."""

from __future__ import annotations

import contextlib
import io
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import msgspec
from builderkit import SYSTEM, ScriptedBuilder, of, wait_log
from reviewkit import GateSigner, Scripted, config_of, running, setup_repo

from bus import Bus, connect
from loopbus.review_status import print_unit
from projections import FOLDS
from schemas import Actor, Event, UnitPlanned, UnitTransitioned
from schemas.decisions import DecisionChoice, DecisionRecorded, DecisionRequested
from schemas.reviews import VerdictAccepted, VerdictRefused
from schemas.slices import UnitDispatched
from workers.builder.daemon import Builder
from workers.reviewer.daemon import Reviewer
from workers.units.daemon import Units

ROUNDING = {
    "decision_id": "rounding",
    "question": "round totals to cents?",
    "options": [{"id": "cents", "summary": "two decimals"}, {"id": "raw", "summary": "floats"}],
    "recommended_default": "cents",
    "confidence": "high",
    "reasoning": "money is shown to people",
    "autonomy": "risky",
}
OLIVE = Actor(role="operator", principal="olive")
SUMMED = {"src/app.py": "def total(xs):\n    return sum(xs)\n"}
RAW = {"src/app.py": "def total(xs):\n    return float(sum(xs))\n"}


def unit_text(project: str, events: list[Event]) -> str:
    states = {fold.name: fold.fold(events) for fold in FOLDS}
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        print_unit(project, "U1", states, as_json=False)
    return buffer.getvalue()


@contextlib.asynccontextmanager
async def loop(url: str, project: str, tmp_path: Path, verdict: dict[str, Any]) -> AsyncIterator[
    tuple[ScriptedBuilder, Scripted, str]
]:  # fmt: skip
    """The three daemons on a long-mode project whose builder auto-picks ``rounding`` and
    whose reviewer answers ``verdict``; yields both agents and the trunk's base commit."""
    # pytest's temporary folders are private to root; the agents run with uids of their
    # own, so their scripts and logs live in folders they can reach (the sandbox shows
    # them the parent of each script's folder: reviewkit.sandbox_for).
    builder_home = Path(tempfile.mkdtemp(prefix="loopbus-agent-"))
    builder_home.chmod(0o777)
    builder = ScriptedBuilder(builder_home / "builder")
    builder.plan(
        [
            {"stdout": {"status": "completed", "novel_decisions": [ROUNDING]}},
            {"write": SUMMED},
            {"write": RAW},
        ]
    )
    shared = Path(tempfile.mkdtemp(prefix="loopbus-agent-"))
    shared.chmod(0o777)
    reviewer = Scripted(shared)
    reviewer.plan([{"stdout": verdict}])
    repo = setup_repo(
        tmp_path, project, {"command": reviewer.command, "roster": ["rita"]},
        build={"command": builder.command, "roster": ["b1"], "timeout": 60, "mode": "long"},
    )  # fmt: skip
    configs = config_of(repo)
    buses = [await connect(url, name=f"second-principal-{n}") for n in range(3)]
    try:
        async with (
            running(buses[0], Units(projects=[project])),
            running(buses[1], Builder(buses[1], configs, tmp_path / "data", heartbeat_s=0.1)),
            running(buses[2], Reviewer(configs)),
        ):
            yield builder, reviewer, repo.base  # type: ignore[attr-defined]
    finally:
        for bus in buses:
            await bus.close()
        shutil.rmtree(shared, ignore_errors=True)
        # builder_home stays: the tests read the builder's briefs after the daemons stop.


async def dispatch(bus: Bus, project: str, unit: str, base: str) -> None:
    """Plan and dispatch ``unit`` owning src/app.py, with no criterion (so test gate results
    without per-test outcomes make it ready)."""
    shape: dict[str, Any] = dict(slice="S1", unit=unit, title="t", files=["src/app.py"])
    await bus.publish(UnitPlanned(project=project, actor=SYSTEM, **shape))
    await bus.publish(
        UnitDispatched(
            project=project, actor=SYSTEM, wave=0, sub_wave=0, position=0, base=base, **shape
        )
    )


async def built_and_gated(bus: Bus, project: str, base: str, *, dispatched: bool = False) -> str:
    """Dispatch U1 (unless done), wait for the builder's commit, pass its gates; the head."""
    signer = GateSigner()
    await signer.register(bus, project)
    if not dispatched:
        await dispatch(bus, project, "U1", base)
    events = await wait_log(bus, project, moved(by="commit"), WAIT_S)
    [commit] = of(UnitTransitioned, events, unit="U1", by="commit")
    assert commit.commit is not None
    result = signer.result(project, "tests", commit.commit, "pass", [])
    await bus.publish(result)
    # the suite answers the commit transition's ask, as the gate runner's does
    suite = signer.suite(project, "U1", commit.commit, [result])
    await bus.publish(signer.sign(msgspec.structs.replace(suite, cause=commit.id)))
    return commit.commit


WAIT_S = 60.0
"""Three daemons and two agent commands per step: a bound for a loaded machine."""


def moved(**fields: Any) -> Callable[[list[Event]], Any]:
    return lambda events: of(UnitTransitioned, events, unit="U1", **fields)


async def test_the_reviewer_sees_the_auto_pick_and_lets_it_stand(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """The auto-picked decision is in the review's input; the approve that follows marks it
    seen by that reviewer, in `status --unit`."""
    approve = {"verdict": "approve", "findings": []}
    async with loop(nats_url, project, tmp_path, approve) as (_builder, reviewer, base):
        await dispatch(bus, project, "U1", base)
        before = unit_text(project, await wait_log(bus, project, lambda es: of(
            DecisionRecorded, es)))  # fmt: skip
        assert "not seen by a second principal yet (no review has carried it)" in before
        assert "it holds the unit's merge" in before
        await built_and_gated(bus, project, base, dispatched=True)
        events = await wait_log(bus, project, lambda es: of(VerdictAccepted, es), WAIT_S)
        calls = reviewer.calls()  # its folder goes with the loop
    [accepted] = of(VerdictAccepted, events)
    assert accepted.decision == "approve"
    [auto] = of(DecisionRecorded, events, owner="auto")
    [given] = [call["doc"]["decisions"] for call in calls]
    assert given == [
        {"decision_id": "rounding", "question": "round totals to cents?",
         "options": ["cents", "raw"], "chosen": "cents", "class": "risky",
         "confidence": "high", "rationale": "money is shown to people"}
    ]  # fmt: skip
    text = unit_text(project, events)
    assert "auto-picked rounding = cents (class risky): seen by reviewer:rita" in text
    assert auto.id in {e.id for e in events}


async def test_the_reviewer_sends_the_auto_pick_to_the_operator(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """An approve that escalates the decision is accepted as reject, re-opens the decision
    for the operator and blocks the unit; the operator's answer supersedes the auto pick,
    unblocks the unit, and the builder runs again with it."""
    escalate = {"verdict": "approve", "findings": [], "escalate": ["rounding"]}
    async with loop(nats_url, project, tmp_path, escalate) as (builder, _reviewer, base):
        await built_and_gated(bus, project, base)
        events = await wait_log(bus, project, moved(by="escalated"), WAIT_S)
        [accepted] = of(VerdictAccepted, events)
        assert (accepted.claimed, accepted.decision) == ("approve", "reject")
        [reopened] = of(DecisionRequested, events, routed="operator")
        [auto] = of(DecisionRecorded, events, owner="auto")
        assert (reopened.escalated_by, reopened.reopens) == ("reviewer:rita", auto.id)
        [blocked] = of(UnitTransitioned, events, unit="U1", by="escalated")
        assert blocked.block is not None and blocked.block.subject == reopened.finding
        text = unit_text(project, events)
        assert "decision rounding waits on the operator" in text
        assert "sent to the operator by reviewer:rita" in text
        await bus.publish(
            DecisionChoice(
                project=project, actor=OLIVE, unit="U1", decision_id="rounding",
                choose="raw",
            )
        )  # fmt: skip
        events = await wait_log(bus, project, lambda es: len(moved(by="commit")(es)) >= 2, WAIT_S)
    [answer] = of(DecisionRecorded, events, owner="operator:olive")
    assert (answer.chosen, answer.supersedes) == ("raw", auto.id)
    assert of(UnitTransitioned, events, unit="U1", by="unblocked")
    briefs = [call["brief"] for call in builder.calls()]
    assert briefs[-1]["decisions"][0]["chosen"] == "raw"
    assert "settled by operator:olive" in unit_text(project, events)


async def test_a_verdict_cannot_escalate_what_its_input_did_not_carry(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """Escalating a decision the review did not carry is refused in one line naming it, and
    re-opens nothing."""
    stray = {"verdict": "approve", "findings": [], "escalate": ["naming"]}
    async with loop(nats_url, project, tmp_path, stray) as (_builder, _reviewer, base):
        await built_and_gated(bus, project, base)
        events = await wait_log(bus, project, lambda es: of(VerdictRefused, es), WAIT_S)
    [refused] = of(VerdictRefused, events)
    assert "escalate names 'naming'" in refused.reason and "it carried: rounding" in refused.reason
    assert not of(DecisionRequested, events, routed="operator")
