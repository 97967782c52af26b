"""A project with no event on the log is refused in one line, unless --new says it is new."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import loopbus

PLAN = '[slice]\nid = "S1"\n\n[[unit]]\nid = "U1"\nfiles = ["a.py"]\n'


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(("status",), id="status"),
        pytest.param(("status", "--unit", "U1"), id="status-unit"),
        pytest.param(("status", "--waiting"), id="status-waiting"),
        pytest.param(("replay",), id="replay"),
        pytest.param(("replay", "--json"), id="replay-json"),
        pytest.param(("tail", "--no-follow"), id="tail"),
        pytest.param(("tail",), id="tail-follow"),
        pytest.param(("findings", "export"), id="findings-export"),
        pytest.param(("record",), id="record"),
        pytest.param(("decision", "list"), id="decision-list"),
        pytest.param(("decision", "show", "--id", "D1"), id="decision-show"),
    ],
)
def test_reading_a_mistyped_project_is_refused(command: tuple[str, ...], nats_url: str) -> None:
    """Reading a project nobody published for exits 2 with one line saying how one starts."""
    result = loopbus(*command, "--project", "nosuchproj", "--nats-url", nats_url)
    assert result.code == 2, result.out + result.err
    assert "--project 'nosuchproj' has no event on the log" in result.err
    assert result.err.count("\n") == 1 and result.out == ""
    assert "--new" in result.err


FINDING = ("--producer", "operator", "--target", "plan:S1", "--severity", "low")
WRITES = [
    pytest.param(("report", "started", "--unit", "U1"), id="report-started"),
    pytest.param(("report", "heartbeat", "--unit", "U1"), id="report-heartbeat"),
    pytest.param(("report", "commit", "--unit", "U1", "--sha", "a" * 40), id="report-commit"),
    pytest.param(("report", "gave-up", "--unit", "U1", "--why", "x"), id="report-gave-up"),
    pytest.param(("report", "usage", "--unit", "U1", "--tokens-in", "5"), id="report-usage"),
    pytest.param(("approve", "--unit", "U1", "--why", "fine"), id="approve"),
    pytest.param(("finding", "resolve", "--id", "0" * 26, "--why", "done"), id="finding-resolve"),
    pytest.param(("trunk", "recheck"), id="trunk-recheck"),
    pytest.param(("config", "adopt", "--why", "reviewed"), id="config-adopt"),
    pytest.param(("decision", "supersede", "--id", "D1", "--chosen", "b"), id="decision-supersede"),
]
NEW_ALLOWED = [
    pytest.param(("report", "finding", *FINDING, "--message", "typo"), id="report-finding"),
    pytest.param(("decision", "record", "--question", "q?", "--chosen", "a"), id="decision"),
    pytest.param(("decision", "objective", "--id", "O1", "--text", "t"), id="objective"),
]


def _fresh(tmp_path: Path) -> str:
    return f"fresh{tmp_path.name[-8:].replace('_', '').replace('-', '')}"


@pytest.mark.parametrize("command", WRITES + NEW_ALLOWED)
def test_writing_to_a_mistyped_project_appends_nothing(
    command: tuple[str, ...], nats_url: str, tmp_path: Path
) -> None:
    """A claim about an unknown project is refused in one line and leaves the log without it."""
    project = _fresh(tmp_path)
    result = loopbus(*command, "--project", project, "--nats-url", nats_url)
    assert result.code == 2, result.out + result.err
    assert f"--project {project!r} has no event on the log" in result.err
    assert result.err.count("\n") == 1
    assert loopbus("replay", "--project", project, "--nats-url", nats_url).code == 2


@pytest.mark.parametrize("command", NEW_ALLOWED)
def test_a_command_that_may_open_a_project_takes_new(
    command: tuple[str, ...], nats_url: str, tmp_path: Path
) -> None:
    """An operator's first finding, decision or objective opens a project with --new."""
    project = _fresh(tmp_path)
    result = loopbus(*command, "--project", project, "--new", "--nats-url", nats_url)
    assert result.code == 0, result.out + result.err
    assert loopbus("replay", "--project", project, "--nats-url", nats_url).code == 0


def test_a_first_plan_needs_new(nats_url: str, tmp_path: Path) -> None:
    """plan submit to an unknown project appends nothing without --new, and is taken with it."""
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    project = f"fresh{tmp_path.name[-8:].replace('_', '').replace('-', '')}"
    refused = loopbus("plan", "submit", str(plan), "--project", project, "--nats-url", nats_url)
    assert refused.code == 2 and "pass --new" in refused.err
    assert loopbus("replay", "--project", project, "--nats-url", nats_url).code == 2
    taken = loopbus(
        "plan", "submit", str(plan), "--project", project, "--new", "--no-wait",
        "--nats-url", nats_url,
    )  # fmt: skip
    assert taken.code == 0, taken.err
    assert loopbus("replay", "--project", project, "--nats-url", nats_url).code == 0


@pytest.mark.parametrize("command", [*NEW_ALLOWED, pytest.param(("plan",), id="plan-submit")])
def test_new_on_a_project_that_has_events_is_refused(
    command: tuple[str, ...], nats_url: str, tmp_path: Path
) -> None:
    """--new names a project that already has events: one line saying so, exit 2, and
    nothing appended (a reused id would mix a new project into an old one's log)."""
    project = _fresh(tmp_path)
    first = loopbus(
        *NEW_ALLOWED[0].values[0], "--project", project, "--new", "--nats-url", nats_url
    )
    assert first.code == 0, first.err
    if command == ("plan",):
        plan = tmp_path / "plan.toml"
        plan.write_text(PLAN)
        command = ("plan", "submit", str(plan), "--no-wait")
    again = loopbus(*command, "--project", project, "--new", "--nats-url", nats_url)
    assert again.code == 2, again.out + again.err
    [line] = again.err.splitlines()
    assert f"--new: project {project!r} already has events on the log" in line
    assert "(the first: finding.raised.v1 by operator:" in line and "seq " in line
    assert "; drop --new to add to it" in line
    replay = loopbus("replay", "--project", project, "--json", "--nats-url", nats_url)
    assert len(replay.json_lines()[0]["events"]) == 1
