"""Every option that takes seconds refuses nan, inf and a non-positive time the same way.

``float()`` took ``nan`` and ``inf``: ``demo --timeout nan`` and ``decide --wait nan`` ran,
and ``decision record --wait 0`` was taken as "do not wait" where ``plan submit --wait 0``
was refused. Each is now one line naming the option and the value, exit 2, before anything
connects (no server is needed to see it).
"""

from __future__ import annotations

import pytest

from .conftest import loopbus

COMMANDS = {
    "demo": ("demo", "--timeout"),
    "decide": (
        "decide", "--project", "p", "--unit", "U1", "--decision", "d", "--confirm", "--wait",
    ),
    "decision-record": (
        "decision", "record", "--project", "p", "--id", "D1", "--question", "q", "--chosen", "c",
        "--wait",
    ),
    "finding-dismiss": (
        "finding", "dismiss", "F1", "--project", "p", "--as", "duplicate", "--why", "w", "--wait",
    ),
    "report-started": ("report", "started", "--project", "p", "--unit", "U1", "--wait"),
    "plan-submit": ("plan", "submit", "plan.toml", "--project", "p", "--wait"),
    "provision": ("provision", "--wait"),
}  # fmt: skip


CASES = [
    (command, value)
    for command in sorted(COMMANDS)
    for value in ("nan", "inf", "-inf", "0", "-1", "soon")
    if (command, value) != ("provision", "0")  # provision --wait 0 means: do not retry
]


@pytest.mark.parametrize(("command", "value"), CASES)
def test_a_time_that_is_no_positive_number_of_seconds_is_refused(command: str, value: str) -> None:
    *words, option = COMMANDS[command]
    done = loopbus(*words, f"{option}={value}")  # = so that -inf is not taken for an option
    assert done.code == 2, done
    lines = done.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.err, done.err
    assert f"argument {option}: {value!r} is not" in lines[0], lines[0]
    assert "number of seconds" in lines[0] and "give one such as 30" in lines[0], lines[0]
