"""What a claim names must exist and make sense, checked before anything is published.

A finding's message, its code target's path and lines, the unit, slice and owner it names,
a unit report's unit, a decision's files and a gate move's gate: each bad one was accepted
with exit 0 and written to the permanent log (or printed "published at seq N" and refused
by a daemon afterwards). Each is now one line, exit 2, and the log is left as it was.
"""

from __future__ import annotations

import pytest

from bus import Bus, read
from schemas import Actor, Outcome, UnitPlanned, UnitTransitioned
from schemas.adoption import ConfigAdopted
from schemas.slices import PlannedUnit, SlicePlan, SlicePlanAccepted
from schemas.subjects import project_subjects

from .conftest import loopbus

SYSTEM = Actor(role="system", principal="tests")
HUGE = "99999999999999999999"
FINDING = ("--producer", "operator", "--severity", "low")


async def _plan(bus: Bus, project: str) -> None:
    """Slice S1 accepted with U1 (planned) and U2 (done), as the system records them."""
    plan = SlicePlan(slice="S1", units=[PlannedUnit(id="U1"), PlannedUnit(id="U2")])
    await bus.publish(SlicePlanAccepted(project=project, actor=SYSTEM, plan=plan, cause="c"))
    for unit in ("U1", "U2"):
        await bus.publish(UnitPlanned(project=project, actor=SYSTEM, unit=unit, slice="S1"))
    await bus.publish(
        UnitTransitioned(project=project, actor=SYSTEM, unit="U2", state="done", prior=None,
                         by="merged", outcome=Outcome(summary="merged", ended_by="merged"))
    )  # fmt: skip


async def _count(bus: Bus, project: str) -> int:
    return len([r async for r in read(bus, subjects=[project_subjects(project)])])


def _finding(nats_url: str, project: str, *args: str) -> tuple[int, str, str]:
    done = loopbus(
        "report", "finding", "--project", project, *FINDING, "--nats-url", nats_url, *args
    )
    return done.code, done.out, done.err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        pytest.param(
            ("--target", "plan:S1", "--message", " "), "--message is empty", id="empty-message"
        ),
        pytest.param(
            ("--target", "code:../../etc/passwd:1-2", "--message", "m"),
            "'../../etc/passwd' must be a path inside the repository",
            id="path-climbs-out",
        ),
        pytest.param(
            ("--target", "code:/etc/passwd:1", "--message", "m"),
            "'/etc/passwd' must be a path inside the repository",
            id="absolute-path",
        ),
        pytest.param(
            ("--target", f"code:a.py:{HUGE}-{HUGE}", "--message", "m"),
            f"line {HUGE} is past the last line a file can have (2147483647)",
            id="impossible-line",
        ),
        pytest.param(
            ("--target", "plan:S1", "--message", "m", "--unit", "nosuchunit"),
            "--unit 'nosuchunit': no accepted plan of project",
            id="unknown-unit",
        ),
        pytest.param(
            ("--target", "plan:S1", "--message", "m", "--slice", "S99"),
            "--slice 'S99': project",
            id="unknown-slice",
        ),
        pytest.param(
            ("--target", "plan:S1", "--message", "m", "--owner", "nobody"),
            "--owner 'nobody' is not an owner: give one of operator, planner, builder",
            id="unknown-owner",
        ),
        pytest.param(
            ("--target", "plan:S1", "--message", "m", "--owner", "builder:U9"),
            "--owner builder:U9 names unit 'U9': no accepted plan",
            id="owner-unknown-unit",
        ),
    ],
)
async def test_a_bad_finding_is_one_line_and_not_published(
    args: tuple[str, ...], says: str, bus: Bus, nats_url: str, project: str
) -> None:
    await _plan(bus, project)
    before = await _count(bus, project)
    code, out, err = _finding(nats_url, project, *args)
    assert (code, out) == (2, ""), err
    assert err.startswith("loopbus: error: ") and err.count("\n") == 1, err
    assert says in err, err
    assert await _count(bus, project) == before


async def test_only_what_does_not_exist_is_refused(bus: Bus, nats_url: str, project: str) -> None:
    """The checks refuse what does not exist, and only that: an existing unit (even a done
    one), an accepted slice, a role or the builder of a unit pass."""
    await _plan(bus, project)
    named = ("--unit", "U2", "--slice", "S1")
    target = ("--target", "code:./src/a.py:3-7", "--message", "m")
    code, _, err = _finding(nats_url, project, *target, *named, "--owner", "builder:U3")
    assert code == 2 and "names unit 'U3'" in err, err
    for owner in ("operator", "builder:U1"):
        code, out, err = _finding(nats_url, project, *target, *named, "--owner", owner)
        assert code == 0, err
        assert " published at seq " in out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        pytest.param(("started", "--unit", "nosuch"), "--unit 'nosuch': no accepted plan",
                     id="started-unknown"),
        pytest.param(("started", "--unit", "U2"),
                     "--unit 'U2' is done already: there is nothing to start", id="started-done"),
        pytest.param(("unblocked", "--unit", "nosuch"), "no accepted plan", id="unblocked"),
        pytest.param(("commit", "--unit", "U2", "--sha", "a" * 40),
                     "there is nothing to commit to", id="commit-done"),
        pytest.param(("gave-up", "--unit", "nosuch", "--why", "w"), "no accepted plan",
                     id="gave-up"),
        pytest.param(("blocked", "--unit", "nosuch", "--reason", "awaiting-dependency",
                      "--subject", "U1"), "no accepted plan", id="blocked"),
        pytest.param(("usage", "--unit", "nosuch", "--tokens-in", "5"), "no accepted plan",
                     id="usage"),
    ],
)  # fmt: skip
async def test_a_report_on_a_unit_that_cannot_take_it_is_refused_before_publishing(
    args: tuple[str, ...], says: str, bus: Bus, nats_url: str, project: str
) -> None:
    await _plan(bus, project)
    before = await _count(bus, project)
    done = loopbus("report", *args, "--project", project, "--nats-url", nats_url)
    assert (done.code, done.out) == (2, ""), done.out + done.err
    assert done.err.count("\n") == 1 and says in done.err, done.err
    assert await _count(bus, project) == before


async def test_a_report_on_an_open_unit_is_published(bus: Bus, nats_url: str, project: str) -> None:
    """U1 is planned and open: its start is published; U3, one slice S1 never had, is not."""
    await _plan(bus, project)
    where = ("--project", project, "--nats-url", nats_url)
    refused = loopbus("report", "started", "--unit", "U3", *where)
    assert refused.code == 2 and "--unit 'U3': no accepted plan" in refused.err, refused.err
    done = loopbus("report", "started", "--unit", "U1", *where)
    assert done.code == 0, done.err
    assert done.out.startswith("started report ")


@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd", "src/../../x"])
async def test_a_decision_file_outside_the_repository_is_refused(
    path: str, bus: Bus, nats_url: str, project: str
) -> None:
    await _plan(bus, project)
    before = await _count(bus, project)
    done = loopbus(
        "decision", "record", "--project", project, "--question", "q?", "--chosen", "a",
        "--file", "src/ok.py", "--file", path, "--nats-url", nats_url,
    )  # fmt: skip
    assert (done.code, done.out) == (2, ""), done.out + done.err
    assert done.err == (
        f"loopbus: error: --file {path!r} must be a path inside the repository (relative to "
        "its root, without '..'), e.g. --file src/app.py\n"
    )
    assert await _count(bus, project) == before


async def test_a_move_of_a_gate_the_project_does_not_have_is_refused(
    bus: Bus, nats_url: str, project: str
) -> None:
    """Any move but a draft needs a gate: one moved or drafted on the log, a check of the
    adopted loopbus.toml, or a shipped profile. Only a gate nobody has is refused."""
    await _plan(bus, project)
    config = '[project]\nid = "p"\n\n[[check]]\nid = "tests"\ncommand = "pytest"\n'
    await bus.publish(
        ConfigAdopted(project=project, actor=SYSTEM, commit="b" * 40, blob="d" * 40,
                      digest="e" * 64, text=config, why="first-start", by="alice")
    )  # fmt: skip
    base = ("gate", "move", "--project", project, "--nats-url", nats_url, "--why", "w")
    before = await _count(bus, project)
    nosuch = loopbus(*base, "--gate", "nosuch", "--move", "retire")
    assert (nosuch.code, nosuch.out) == (2, ""), nosuch.err
    assert nosuch.err == (
        f"loopbus: error: --gate 'nosuch': project {project!r} has no local gate of that id "
        "(no move of it on the log, and it is not a check of its adopted loopbus.toml); "
        "check the id, or start the gate with --move draft\n"
    )
    profile = ("--scope", "profile", "--role", "standards")
    nosuch = loopbus(*base, *profile, "--gate", "nosuch", "--move", "lower-cadence", "--every", "3")
    assert nosuch.code == 2 and "it is not a shipped profile" in nosuch.err, nosuch.err
    assert await _count(bus, project) == before
    for known in (
        ("--gate", "tests", "--move", "retire"),  # a configured check
        ("--gate", "fresh", "--move", "draft"),  # a draft starts a gate...
        ("--gate", "fresh", "--move", "approve"),  # ...which is then the log's
        (*profile, "--gate", "cli", "--move", "lower-cadence", "--every", "3"),
    ):
        done = loopbus(*base, *known)
        assert done.code == 0, (known, done.err)
        assert " claimed at seq " in done.out
