"""What an agent writes cannot drive the operator's terminal: every human-readable view of
the log shows control and bidi characters as visible escapes, one entry per line."""

from __future__ import annotations

import asyncio
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernelkit import running

from bus import Bus
from loopbus.terminal_text import one_line
from schemas import Actor, FindingRaised, parse_target
from schemas.decisions import DecisionRecorded
from workers.projector.daemon import ProjectorDaemon

from .conftest import loopbus

P = "inks"
AGENT = Actor(role="reviewer", principal="mallory")
SYSTEM = Actor(role="system", principal="tests")
MESSAGE = "line1\nline2\x1b[31mred \u202eevil\x9b2J\x7f"
QUESTION = "evil\x1b]0;pwned\x07 q\nsecond line"
# Everything a terminal acts on, but the line ends loopbus writes itself.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


async def test_agent_text_with_controls_is_shown_inert_on_every_view(own_bus: Bus) -> None:
    """A reviewer's finding and a recorded decision carrying ESC, OSC, BEL, C1, DEL, a bidi
    override and newlines: tail, status, replay, decision list and decision show print no
    raw control character, keep each on one line, and show the characters as escapes."""
    finding = FindingRaised(
        project=P, actor=AGENT, producer="reviewer", target=parse_target("code:src/a.py:1-2"),
        severity="high", criterion="C1", message=MESSAGE,
    )  # fmt: skip
    decision = DecisionRecorded(
        project=P, actor=SYSTEM, question=QUESTION, options=["a", "b"], chosen="a",
        owner="operator", evidence=[], files=[], criteria=[], trade_offs=[],
    )  # fmt: skip
    await own_bus.publish(finding)
    last = (await own_bus.publish(decision)).seq
    projector = ProjectorDaemon(own_bus)
    async with running(own_bus, projector):
        async with asyncio.timeout(30):
            while projector.checkpoint < last:
                await asyncio.sleep(0.05)
    url = ("--nats-url", own_bus.url)
    views = {
        "tail": ("tail", "--project", P, "--no-follow", *url),
        "status": ("status", "--project", P, *url),
        "replay": ("replay", "--project", P, *url),
        "decision list": ("decision", "list", "--project", P, *url),
        "decision show": ("decision", "show", "--project", P, "--id", decision.id, *url),
    }
    shown_message = "line1 line2\\x1b[31mred \\u202eevil\\x9b2J\\x7f"
    shown_question = "evil\\x1b]0;pwned\\x07 q second line"
    for name, args in views.items():
        done = await asyncio.to_thread(loopbus, *args)
        assert done.code == 0, (name, done.err)
        assert RAW.search(done.out) is None, (name, done.out)
        lines = done.out.splitlines()
        assert not any(line.startswith(("line2", "second line")) for line in lines), done.out
        if name != "decision show" and name != "decision list":
            assert any(shown_message in line for line in lines), (name, done.out)
        if name != "status":  # status shows the decisions in force: checked just below
            assert any(shown_question in line for line in lines), (name, done.out)
    status = await asyncio.to_thread(loopbus, *views["status"])
    assert any(f"{decision.id}: {shown_question} -> a" in line for line in status.out.splitlines())


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_any_text_becomes_one_inert_line(raw: str) -> None:
    """Whatever an agent writes, one_line leaves nothing a terminal acts on, and no line
    break; text without control or bidi characters is left as it is."""
    shown = one_line(raw)
    assert RAW.search(shown) is None and "\n" not in shown
    if RAW.search(raw) is None and not any(c in raw for c in "\n\u2028\u2029"):
        assert shown == raw
