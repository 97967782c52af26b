"""`loopbus decide` and the trade-off table in `status --unit`, against the real daemons."""

from __future__ import annotations

import asyncio
import contextlib
import io
import sys
from pathlib import Path

from builderkit import ScriptedBuilder, configs, daemons, dispatch, of, setup, wait_log

from bus import Bus
from loopbus.review_status import print_unit
from projections import FOLDS
from schemas import Event, UnitTransitioned
from schemas.decisions import DecisionChoice, DecisionRecorded

FOLDS_BY_NAME = {fold.name: fold for fold in FOLDS}

DECISION = {
    "decision_id": "rounding",
    "question": "round totals to cents?",
    "options": [
        {"id": "cents", "summary": "round half even", "user_impact": "exact money"},
        {"id": "raw", "summary": "keep floats", "performance": "no cost"},
    ],
    "recommended_default": "cents",
    "confidence": "med",
    "reasoning": "money is shown to people",
}


async def loopbus(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "loopbus.cli", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def unit_text(project: str, events: list[Event]) -> str:
    states = {fold.name: fold.fold(events) for fold in FOLDS}
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        print_unit(project, "U1", states, as_json=False)
    return buffer.getvalue()


async def test_decide_settles_the_decision_the_unit_waits_on(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """status --unit shows the trade-off table; a wrong option or decision is one line and
    exit 2; the right choice is recorded by the builder daemon and the unit is built."""
    agent = ScriptedBuilder(tmp_path / "agent")
    agent.plan(
        [
            {"stdout": {"status": "completed", "novel_decisions": [DECISION]}},
            {"write": {"src/app.py": "def total(xs):\n    return sum(xs)\n"}},
        ]
    )
    repo, base = setup(tmp_path, project, agent.command)
    url = ("--nats-url", nats_url, "--project", project, "--principal", "olive")
    async with daemons(nats_url, project, configs(repo, project, agent.command), tmp_path / "data"):
        await dispatch(bus, project, "U1", base)
        events = await wait_log(
            bus, project, lambda es: of(UnitTransitioned, es, unit="U1", state="blocked")
        )
        text = unit_text(project, events)
        assert "decision rounding waits on the operator: round totals to cents?" in text
        assert "cents (recommended) | round half even | exact money | - | - | -" in text
        assert "raw | keep floats | - | no cost | - | -" in text

        code, _out, err = await loopbus("decide", *url, "--unit", "U1", "--decision",
                                        "rounding", "--choose", "floor")  # fmt: skip
        assert code == 2 and err.count("\n") == 1
        assert "--choose 'floor' is not one of: cents, raw" in err
        code, _out, err = await loopbus("decide", *url, "--unit", "U1", "--decision",
                                        "speed", "--choose", "raw")  # fmt: skip
        assert code == 2 and "does not wait on the operator" in err

        code, out, err = await loopbus("decide", *url, "--unit", "U1", "--decision",
                                       "rounding", "--choose", "raw", "--wait", "30")  # fmt: skip
        assert code == 0, err
        assert "recorded: rounding = raw (by operator:olive)" in out
        events = await wait_log(
            bus, project, lambda es: of(UnitTransitioned, es, unit="U1", by="commit")
        )
    [recorded] = of(DecisionRecorded, events)
    assert recorded.actor.role == "system"
    assert "decision rounding: raw (by operator:olive" in unit_text(project, events)


async def test_decide_refuses_an_unknown_project(nats_url: str) -> None:
    """A project with no event on the log is refused in one line."""
    code, _out, err = await loopbus("decide", "--nats-url", nats_url, "--project", "nosuchproj",
                                    "--unit", "U1", "--decision", "d", "--choose", "a")  # fmt: skip
    assert code == 2 and "--project 'nosuchproj' has no event on the log" in err


async def test_decide_confirm_makes_an_auto_pick_seen_by_the_operator(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """In long mode an auto pick waits for a second principal: status --unit says it holds
    the merge and what to run; `--choose` of another option is refused in one line;
    `--confirm` publishes the operator's choice of the option picked, and the pick is then
    seen by that operator (the unit's merge is no longer held)."""
    agent = ScriptedBuilder(tmp_path / "agent")
    picked = {**DECISION, "confidence": "high", "autonomy": "safe"}
    agent.plan(
        [
            {"stdout": {"status": "completed", "novel_decisions": [picked]}},
            {"write": {"src/app.py": "def total(xs):\n    return sum(xs)\n"}},
        ]
    )
    repo, base = setup(tmp_path, project, agent.command, mode="long")
    url = ("--nats-url", nats_url, "--project", project, "--principal", "olive")
    config = configs(repo, project, agent.command, "long")
    async with daemons(nats_url, project, config, tmp_path / "data"):
        await dispatch(bus, project, "U1", base)
        events = await wait_log(
            bus, project, lambda es: of(UnitTransitioned, es, unit="U1", by="commit")
        )
    text = unit_text(project, events)
    assert "auto-picked rounding = cents" in text
    assert "holds the unit's merge" in text
    assert "loopbus decide --unit U1 --decision rounding --confirm" in text

    code, _out, err = await loopbus("decide", *url, "--unit", "U1", "--decision",
                                    "rounding", "--choose", "raw")  # fmt: skip
    assert code == 2 and err.count("\n") == 1 and "auto-picked as 'cents'" in err
    code, out, err = await loopbus("decide", *url, "--unit", "U1", "--decision",
                                   "rounding", "--confirm")  # fmt: skip
    assert code == 0, err
    assert "auto pick cents confirmed" in out
    events = await wait_log(bus, project, lambda es: bool(of(DecisionChoice, es)))
    [choice] = of(DecisionChoice, events)
    assert (choice.actor.role, choice.actor.principal, choice.choose) == (
        "operator",
        "olive",
        "cents",
    )
    state = FOLDS_BY_NAME["builds"].fold(events)
    assert state.units["U1"].picks["rounding"].confirmed_by == "operator:olive"
    assert "confirmed by operator:olive" in unit_text(project, events)
