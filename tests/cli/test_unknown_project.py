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
        pytest.param(("replay",), id="replay"),
        pytest.param(("replay", "--json"), id="replay-json"),
    ],
)
def test_reading_a_mistyped_project_is_refused(command: tuple[str, ...], nats_url: str) -> None:
    """status and replay of a project nobody published for exit 2 with one line."""
    result = loopbus(*command, "--project", "nosuchproj", "--nats-url", nats_url)
    assert result.code == 2, result.out + result.err
    assert "--project 'nosuchproj' has no event on the log" in result.err
    assert result.err.count("\n") == 1 and result.out == ""


def test_a_first_plan_needs_new(nats_url: str, tmp_path: Path) -> None:
    """plan submit to an unknown project appends nothing without --new, and is taken with it."""
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    project = f"fresh{tmp_path.name[-8:].replace('_', '').replace('-', '')}"
    refused = loopbus("plan", "submit", str(plan), "--project", project, "--nats-url", nats_url)
    assert refused.code == 2 and "pass --new" in refused.err
    assert loopbus("replay", "--project", project, "--nats-url", nats_url).code == 2
    taken = loopbus(
        "plan", "submit", str(plan), "--project", project, "--new", "--nats-url", nats_url
    )
    assert taken.code == 0, taken.err
    assert loopbus("replay", "--project", project, "--nats-url", nats_url).code == 0
