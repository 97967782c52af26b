"""`loopbus tail` into a pipe or a file: one readable line per event, JSON only with --json."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bus import Bus
from loopbus.event_line import value
from schemas import Actor, Event, UnitPlanned
from schemas.adoption import ConfigAdopted
from schemas.gates import GateResultRecorded, GateSuiteCompleted, SuiteEntry
from schemas.ratchet import GateMoved
from schemas.slices import PlannedUnit, PlanSubmission, SlicePlan

from .conftest import loopbus

SYSTEM = Actor(role="system", principal="tests")
SIGNATURE = "c2lnbmVkLWJ5LXRoZS1ydW5uZXIta2V5LXRoYXQtbm9ib2R5LXJlYWRz"
CONFIG = '# loopbus.toml\n[project]\nid = "p"\n\n[[check]]\nid = "tests"\ncommand = "pytest"\n'


def events(project: str) -> list[Event]:
    """Events whose fields once came out as raw dicts, a signature and a multi-line file."""
    result = GateResultRecorded(
        project=project, actor=SYSTEM, check="tests", tree="a" * 40, commit="b" * 40,
        inputs="a" * 40, config_sha="c" * 64, outcome="fail", summary="1 passed, 1 failed",
        duration_s=1.25, runner="gate-runner-1", signature=SIGNATURE,
        tests={"t.py::a": "passed", "t.py::b": "failed", "t.py::c": "passed",
               "t.py::d": "passed", "t.py::e": "pending-failed"},
    )  # fmt: skip
    suite = GateSuiteCompleted(
        project=project, actor=SYSTEM, commit="b" * 40, outcome="fail", runner="gate-runner-1",
        signature=SIGNATURE,
        checks=[SuiteEntry(check="tests", outcome="fail", cached=False, result=result.id,
                           duration_s=1.25),
                SuiteEntry(check="boot", outcome="pass", cached=True, result=result.id,
                           duration_s=0.5)],
    )  # fmt: skip
    adopted = ConfigAdopted(
        project=project, actor=SYSTEM, commit="b" * 40, blob="d" * 40, digest="e" * 64,
        text=CONFIG, why="first-start", by="alice",
    )  # fmt: skip
    plan = SlicePlan(slice="S1", units=[PlannedUnit(id="U1"), PlannedUnit(id="U2")])
    submitted = PlanSubmission(
        project=project, actor=Actor(role="planner", principal="p1"), plan=plan
    )
    moved = GateMoved(
        project=project, actor=SYSTEM, gate="no-print", scope="local", move="draft",
        source=None, target="Drafted", claim=result.id, authority="builder:b1",
    )  # fmt: skip
    return [result, suite, adopted, submitted, moved]


async def test_tail_into_a_pipe_prints_one_readable_line_per_event(
    bus: Bus, nats_url: str, project: str
) -> None:
    """Not on a terminal, tail prints one line per event: no signature, no key, no file
    spread over lines, no raw dict; nested records are named (``tests:fail``), hashes cut
    to 12 characters; --json prints every field, the signature included."""
    for event in events(project):
        await bus.publish(event)
    done = loopbus("tail", "--project", project, "--no-follow", "--nats-url", nats_url)
    assert done.code == 0, done.err
    lines = done.out.splitlines()
    assert len(lines) == 5, done.out
    result, suite, adopted, submitted, moved = lines
    for line in lines:
        assert SIGNATURE not in line and "{'" not in line and "\x1b[" not in line, line
        assert "a" * 13 not in line and "e" * 13 not in line, line  # hashes cut, digests hidden
    assert "gate.result_recorded check=tests commit=bbbbbbbbbbbb outcome=fail" in result
    assert "tests=5(3 passed,1 failed,1 pending-failed)" in result
    assert "checks=tests:fail,boot:pass(cached)" in suite
    assert "config.adopted commit=bbbbbbbbbbbb why=first-start by=alice" in adopted
    assert "[project]" not in adopted
    assert "plan.submission plan=S1(U1,U2)" in submitted
    assert "gate.moved gate=no-print scope=local move=draft target=Drafted" in moved  # no Target
    as_json = loopbus("tail", "--project", project, "--no-follow", "--json", "--nats-url", nats_url)
    documents = [json.loads(line) for line in as_json.out.splitlines()]
    assert [d["signature"] for d in documents[:2]] == [SIGNATURE, SIGNATURE]
    assert documents[2]["text"] == CONFIG


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=200),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=30,
)


# No time limit per example, nor on drawing them: either is a timed assertion on a busy machine.
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON)
def test_any_field_value_is_one_short_line(raw: Any) -> None:
    """Whatever a field holds (a future event's, a forged one's), it renders, on one line."""
    shown = value(raw)
    assert "\n" not in shown and "\r" not in shown


async def test_tail_refuses_a_unit_the_project_never_planned(
    bus: Bus, nats_url: str, project: str
) -> None:
    """``tail --unit`` with a mistyped unit printed nothing and exited 0 (or, following,
    waited forever); it is refused like ``status --unit`` refuses it: one line, exit 2. A
    planned unit is tailed as before."""
    await bus.publish(UnitPlanned(project=project, actor=SYSTEM, slice="S1", unit="U1"))
    for follow in ((), ("--no-follow",)):
        done = loopbus(
            "tail", "--project", project, "--unit", "nosuch", *follow, "--nats-url", nats_url,
            timeout=30,
        )  # fmt: skip
        assert done.code == 2, done
        assert done.out == ""
        assert done.err.strip().splitlines() == [
            f"loopbus: error: --unit 'nosuch': no accepted plan of project {project!r} has "
            f"that unit (loopbus status --project {project} shows its units)"
        ]
    known = loopbus(
        "tail", "--project", project, "--unit", "U1", "--no-follow", "--nats-url", nats_url
    )
    assert known.code == 0, known.err
    assert len(known.out.splitlines()) == 1 and "unit.planned" in known.out
