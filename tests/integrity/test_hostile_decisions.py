"""A hostile agent against a real ``loopbus up --repo`` tries to settle a decision that waits
on the operator: it holds only the agent credential ``up`` hands out and a NATS client.

Its answer is a claim the server lets through (its own claim subject), so the refusal is
the folds': a ``decision.choice`` from any role but the operator is a forgery no fold
applies and the integrity daemon names; a ``decision.recorded`` claim is never a unit's
decision (the ratchet refuses it). The decision stays open, and the operator's own
``loopbus decide`` still settles it. The same forgery cannot confirm a decision ``long``
mode picked alone either (the confirmation that lets its unit merge is the operator's).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from dulwich import porcelain
from dulwich.repo import Repo
from integrity.test_hostile_agent import WAIT_S, Loop, raw_agent, running_up

from bus import connect_once
from projections import builds
from projections.builds import unseen_picks
from schemas import Actor, UnitPlanned, UnitTransitioned, encode_event, subject_of
from schemas.builds import DecisionOption
from schemas.decisions import DecisionChoice, DecisionRecorded, DecisionRequested
from schemas.slices import UnitDispatched

pytestmark = pytest.mark.slow

P = "shop"
SYSTEM = Actor(role="system", principal="tests")

BUILDER = r"""
import json, pathlib, sys
brief = json.load(sys.stdin)
chosen = {d["decision_id"]: d["chosen"] for d in brief["decisions"]}
if "rounding" not in chosen:
    print(json.dumps({"schema": "loopbus.envelope.v2", "status": "completed", "novel_decisions": [{
        "decision_id": "rounding", "question": "round totals to cents?",
        "options": [{"id": "cents"}, {"id": "raw"}], "recommended_default": "cents",
        "confidence": "low", "autonomy": "risky"}]}))
else:
    pathlib.Path("app.py").write_text(f"ROUNDING = {chosen['rounding']!r}\n")
    print(json.dumps({"schema": "loopbus.envelope.v2", "status": "completed"}))
"""


def repository(folder: Path) -> Path:
    """A repository whose trunk configures a builder that asks one decision (normal mode)."""
    folder.mkdir(parents=True)
    # The builder's script lives outside the repository; the sandbox shows it read-only.
    tools = folder.parent / "tools"
    tools.mkdir()
    builder = tools / "builder.py"
    builder.write_text(BUILDER)
    config = (
        f'[project]\nid = "{P}"\n\n[[check]]\nid = "ok"\ncommand = "true"\nparser = "exit-code"\n'
        f"\n[build]\ncommand = {json.dumps(f'{sys.executable} {builder}')}\n"
        'roster = ["b1"]\ntimeout = 60\nmode = "normal"\n'
        f"\n[agents]\nread_only = {json.dumps([str(tools)])}\n"
    )
    (folder / "loopbus.toml").write_text(config)
    (folder / "app.py").write_text("ROUNDING = None\n")
    with Repo.init(str(folder)) as repo:
        repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
        porcelain.add(repo, [str(folder / "loopbus.toml"), str(folder / "app.py")])
        porcelain.commit(repo, b"base", author=b"a <a@x>", committer=b"a <a@x>")
    return folder


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    root = tmp_path_factory.mktemp("hostile-decisions")
    repo = repository(root / "repo")
    with running_up(root / "data", "--repo", str(repo)) as started:
        yield started


async def dispatch(loop: Loop, unit: str) -> None:
    """Plan and dispatch ``unit`` on trunk, as the system (the test's own setup)."""
    with Repo(str(loop.data_dir.parent / "repo")) as repo:
        base = repo.refs[b"refs/heads/main"].decode()
    shape = dict(slice="S1", unit=unit, title="round", files=["app.py"], criteria=[])
    bus = await connect_once(loop.url, creds=loop.cred("system"))
    try:
        await bus.publish(UnitPlanned(project=P, actor=SYSTEM, **shape))  # type: ignore[arg-type]
        await bus.publish(
            UnitDispatched(
                project=P, actor=SYSTEM, wave=0, sub_wave=0, position=0, base=base,
                **shape,  # type: ignore[arg-type]
            )
        )  # fmt: skip
    finally:
        await bus.close()


async def until(loop: Loop, found: object, what: str) -> list[object]:
    """The project's events once ``found(events)`` holds (bounded)."""
    async with asyncio.timeout(WAIT_S):
        while True:
            events = await loop.events(P)
            if found(events):  # type: ignore[operator]
                return events  # type: ignore[return-value]
            await asyncio.sleep(0.2)
    raise AssertionError(what)


async def test_an_agent_cannot_answer_the_operator_s_decision(loop: Loop) -> None:
    """A raw decision.choice and a decision.recorded claim for the waiting decision, on the
    agent's own claim subject: neither settles it, both are named in findings, and the
    operator's `loopbus decide` afterwards is recorded as the operator's."""
    await dispatch(loop, "U1")
    await until(
        loop,
        lambda es: any(
            isinstance(e, UnitTransitioned) and e.unit == "U1" and e.state == "blocked" for e in es
        ),
        "U1 never blocked awaiting the operator",
    )
    me = Actor(role="builder", principal="agent")
    choice = DecisionChoice(project=P, actor=me, unit="U1", decision_id="rounding", choose="raw")
    recorded = DecisionRecorded(
        project=P, actor=me, unit="U1", decision_id="rounding", question="round totals?",
        options=["cents", "raw"], chosen="raw", owner="operator:operator",
        trade_offs=[DecisionOption(id="cents"), DecisionOption(id="raw")],
    )  # fmt: skip
    client = await raw_agent(loop)
    try:
        js = client.jetstream()
        for claim in (choice, recorded):
            await js.publish(subject_of(claim), encode_event(claim))  # the server stores both
    finally:
        await client.close()

    [forgery] = await loop.findings(P, lambda f: f.evidence.get("forged") == choice.id)
    assert forgery.evidence["forger"] == "builder:agent" and forgery.cls == "forgery"
    assert "only operator" in forgery.message
    [refusal] = await loop.findings(P, lambda f: f.evidence.get("claim") == recorded.id)
    assert refusal.cls == "refused-transition"

    decided = loop.cli(
        "decide", "--project", P, "--unit", "U1", "--decision", "rounding", "--choose",
        "cents", "--wait", "60", role="operator",
    )  # fmt: skip
    assert decided.returncode == 0, decided.stderr
    assert "recorded: rounding = cents (by operator:operator)" in decided.stdout
    events = await loop.events(P)
    facts = [e for e in events if isinstance(e, DecisionRecorded) and e.actor.role == "system"]
    assert [(f.chosen, f.owner) for f in facts if f.unit == "U1"] == [
        ("cents", "operator:operator")
    ]
    assert [e for e in events if isinstance(e, DecisionRequested) and e.unit == "U1"]


async def test_an_agent_cannot_confirm_an_auto_pick(loop: Loop) -> None:
    """An auto pick holds its unit's merge until a second principal sees it. A raw
    ``decision.choice`` of the picked option from the agent credential (what an operator's
    confirmation looks like) is a forgery: the pick stays unseen; the operator's
    ``loopbus decide --confirm`` confirms it."""
    await dispatch(loop, "U2")
    asked = DecisionRequested(
        project=P, actor=SYSTEM, unit="U2", decision_id="currency", question="which currency?",
        options=[DecisionOption(id="eur"), DecisionOption(id="usd")],
        recommended_default="eur", confidence="high", routed="auto", autonomy="risky",
    )  # fmt: skip
    picked = DecisionRecorded(
        project=P, actor=SYSTEM, unit="U2", decision_id="currency", question=asked.question,
        options=["eur", "usd"], chosen="eur", owner="auto", confidence=0.9, cause=asked.id,
    )  # fmt: skip
    bus = await connect_once(loop.url, creds=loop.cred("system"))
    try:  # long mode's pick, recorded as the builder daemon records one
        await bus.publish(asked)
        await bus.publish(picked)
    finally:
        await bus.close()
    me = Actor(role="builder", principal="agent")
    forged = DecisionChoice(project=P, actor=me, unit="U2", decision_id="currency", choose="eur")
    client = await raw_agent(loop)
    try:
        await client.jetstream().publish(subject_of(forged), encode_event(forged))
    finally:
        await client.close()
    [forgery] = await loop.findings(P, lambda f: f.evidence.get("forged") == forged.id)
    assert forgery.evidence["forger"] == "builder:agent" and forgery.cls == "forgery"
    [pick] = unseen_picks(builds.FOLD.fold(await loop.events(P)), "U2")
    assert pick.decision_id == "currency" and pick.confirmed_by is None

    confirmed = loop.cli(
        "decide", "--project", P, "--unit", "U2", "--decision", "currency", "--confirm",
        role="operator",
    )  # fmt: skip
    assert confirmed.returncode == 0, confirmed.stderr
    assert "auto pick eur confirmed" in confirmed.stdout
    state = builds.FOLD.fold(await loop.events(P))
    assert unseen_picks(state, "U2") == []
    assert state.units["U2"].picks["currency"].confirmed_by == "operator:operator"
