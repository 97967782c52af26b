"""The charter command line: bad input is one line naming field, value and fix; a charter
submitted, shown, approved (``--wait`` answered by the charter daemon), the run printed
and stopped — each against a real server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from charterkit import charter_daemon, log_of, loopbus, wait_for
from slice_helpers import of_type

from bus import Bus
from schemas.charter import CharterApproved, CharterSubmission, RunEnded, RunStop

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "charter.md"
GOOD = EXAMPLE.read_text()


@pytest.mark.parametrize(
    ("text", "field", "fix"),
    [
        pytest.param(
            GOOD.replace('test = "tests/test_calc.py::test_add"', ""),
            "criteria[0] (adds)",
            "give exactly one of check",
            id="criterion-without-check-or-test",
        ),
        pytest.param(
            GOOD.replace('check = "tests"', 'check = "tests"\ntest = "t.py::x"'),
            "criteria[2] (suite)",
            "give exactly one of check",
            id="criterion-with-both",
        ),
        pytest.param(
            GOOD.replace('wall_clock = "2h"', 'wall_clock = "two hours"'),
            "budgets.wall_clock = 'two hours'",
            "expected a duration",
            id="bad-duration",
        ),
        pytest.param(
            GOOD.replace('wall_clock = "2h"', 'wall_clock = "2h"\nlong = true'),
            "budgets.long = True",
            "not both",
            id="long-and-wall-clock",
        ),
        pytest.param(
            GOOD.replace('autonomy = "supervised"', 'autonomy = "yolo"'),
            "autonomy = 'yolo'",
            "use one of supervised, full",
            id="bad-autonomy",
        ),
        pytest.param(
            GOOD.replace("slices = 3", "slices = -1"),
            "budgets.slices = -1",
            "a whole number",
            id="negative-budget",
        ),
        pytest.param(
            GOOD.replace('title = "A', 'titel = "A'),
            "titel",
            "not a charter field",
            id="unknown-field",
        ),
        pytest.param(
            GOOD.replace('test = "tests/test_calc.py::test_add"', 'test = "test_add"'),
            "criteria[0] (adds).test = 'test_add'",
            "pytest node id",
            id="test-not-a-node-id",
        ),
        pytest.param(
            GOOD.replace("+++\n\n# Calculator", "\n# Calculator"),
            "front matter",
            "closing '+++'",
            id="unclosed-front-matter",
        ),
    ],
)
def test_a_bad_charter_is_one_line_naming_field_value_and_fix(
    tmp_path: Path, text: str, field: str, fix: str
) -> None:
    path = tmp_path / "charter.md"
    path.write_text(text)
    done = loopbus("charter", "submit", str(path), "--project", "p1", "--check")
    assert done.code == 2, done.out
    assert done.err.count("\n") == 1 and "Traceback" not in done.err
    assert field in done.err and fix in done.err


def test_a_good_charter_stands_long_means_eight_hours(tmp_path: Path) -> None:
    done = loopbus("charter", "submit", str(EXAMPLE), "--project", "p1", "--check")
    assert done.code == 0, done.err
    assert "criterion divides: div(6, 3) is 2 [test tests/test_calc.py::test_div]" in done.out
    path = tmp_path / "charter.toml"
    path.write_text(
        'id = "c2"\ntitle = "long"\n[budgets]\nlong = true\n'
        '[[criteria]]\nid = "s"\ntext = "green"\ncheck = "tests"\n'
    )
    done = loopbus("charter", "submit", str(path), "--project", "p1", "--check")
    assert done.code == 0, done.err
    assert "wall clock 8h" in done.out


async def test_submit_show_approve_wait_run_stop(bus: Bus, nats_url: str, project: str) -> None:
    url = ("--nats-url", nats_url, "--project", project)
    env = {"LOOPBUS_PRINCIPAL": "olive"}
    nothing = await asyncio.to_thread(loopbus, "approve", "--charter", "--why", "x", *url)
    assert nothing.code == 2 and "has no event on the log" in nothing.err
    done = await asyncio.to_thread(
        loopbus, "charter", "submit", str(EXAMPLE), *url, "--new", env=env
    )
    assert done.code == 0, done.err
    [sub] = of_type(await log_of(bus, project), CharterSubmission)
    assert sub.charter.text.startswith("# Calculator") and sub.actor.principal == "olive"
    shown = await asyncio.to_thread(loopbus, "charter", "show", *url)
    assert "awaiting approval: calc-v1" in shown.out and "state: awaiting-approval" in shown.out
    both = await asyncio.to_thread(
        loopbus, "approve", "--unit", "U1", "--charter", "--why", "x", *url
    )
    assert both.code == 2 and "not allowed with argument" in both.err
    wrong = await asyncio.to_thread(loopbus, "approve", "--charter", "calc-v2", "--why", "x", *url)
    assert wrong.code == 2 and "the charter awaiting approval is 'calc-v1'" in wrong.err
    no_stop = await asyncio.to_thread(loopbus, "run", "--stop", "--why", "x", *url)
    assert no_stop.code == 2 and "no run in progress" in no_stop.err
    async with charter_daemon(bus, project):
        approved = await asyncio.to_thread(
            loopbus,
            "approve",
            "--charter",
            "calc-v1",
            "--why",
            "scope agreed",
            "--wait",
            *url,
            env=env,
        )
        assert approved.code == 0, approved.err
        assert "approved: the run of charter calc-v1 started" in approved.out
        run = await asyncio.to_thread(loopbus, "run", *url)
        assert "charter in force: calc-v1" in run.out and "state: running" in run.out
        as_json = json.loads((await asyncio.to_thread(loopbus, "run", "--json", *url)).out)
        assert (as_json["charter"]["id"], as_json["state"]) == ("calc-v1", "running")
        assert as_json["spent"]["wall_clock_s"] >= 0 and as_json["criteria"]["held"] == []
        assert "criteria: 0 of 3 criteria judged yet" in run.out
        assert "slices 0 of 3" in run.out
        why = await asyncio.to_thread(loopbus, "run", "--stop", *url)
        assert why.code == 2 and "--why" in why.err
        stop = await asyncio.to_thread(
            loopbus, "run", "--stop", "--why", "scope changed", *url, env=env
        )
        assert stop.code == 0, stop.err
        ended = await wait_for(bus, project, RunEnded)
    events = await log_of(bus, project)
    [approval] = of_type(events, CharterApproved)
    [claim] = of_type(events, RunStop)
    assert approval.why == "scope agreed" and ended.claim == claim.id
    final = await asyncio.to_thread(loopbus, "run", *url)
    assert "state: ended (stopped: scope changed)" in final.out


async def test_charter_show_and_run_print_json(bus: Bus, nats_url: str, project: str) -> None:
    """`charter show --json` and `run --json`: one document of what they print (docs/cli.md
    promises --json on every command that reports state; both refused it)."""
    url = ("--nats-url", nats_url, "--project", project)
    done = await asyncio.to_thread(loopbus, "charter", "submit", str(EXAMPLE), *url, "--new")
    assert done.code == 0, done.err
    for command in (("charter", "show"), ("run",)):
        shown = await asyncio.to_thread(loopbus, *command, "--json", *url)
        assert shown.code == 0, shown.err
        document = json.loads(shown.out)
        assert document["project"] == project and document["charter"] is None
        assert document["awaiting"]["id"] == "calc-v1"
        assert document["state"] == "awaiting-approval" and document["slices"] == []
        assert document["spent"] == {"wall_clock_s": None, "tokens": 0, "slices": 0}
