"""`loopbus replay` audits every projection the daemons keep: a convergence verdict and the
review rounds behind it can be seen as they stood at any sequence."""

from __future__ import annotations

import asyncio

from bus import connect
from schemas import Actor, UnitPlanned
from schemas.reviews import RoundClosed

from .conftest import loopbus

SYSTEM = Actor(role="system", principal="tests")
KEY = "code:a.py:1-1|high|C1"


def round_closed(project: str, number: int, convergence: str, action: str) -> RoundClosed:
    return RoundClosed(
        project=project, actor=SYSTEM, unit="U1", round=number, head=f"{number:x}" * 40,
        finding_keys=[KEY], blocking_keys=[KEY], failure_signature="same",
        diff_digest=f"d{number}", passed=False, convergence=convergence,  # type: ignore[arg-type]
        action=action, rung=1, cause=f"c{number}",  # type: ignore[arg-type]
    )  # fmt: skip


async def publish_rounds(url: str, project: str) -> list[int]:
    bus = await connect(url)
    try:
        await bus.publish(UnitPlanned(project=project, actor=SYSTEM, unit="U1", slice="S1"))
        first = await bus.publish(round_closed(project, 1, "first", "continue"))
        second = await bus.publish(round_closed(project, 2, "stalled", "stopped"))
        return [first.seq, second.seq]
    finally:
        await bus.close()


def test_replay_until_shows_a_convergence_verdict_as_it_stood(nats_url: str, project: str) -> None:
    """Folded to the first round the unit was on its first round; folded to the end it is
    stalled and stopped; the reviews projection is folded too."""
    first, _second = asyncio.run(publish_rounds(nats_url, project))
    common = ("replay", "--project", project, "--json", "--nats-url", nats_url)
    then = loopbus(*common, "--until", str(first)).json_lines()[0]["state"]
    now = loopbus(*common).json_lines()[0]["state"]
    assert {"reviews", "investigations", "convergence"} <= set(now)
    rounds_then = then["convergence"]["units"]["U1"]["rounds"]
    rounds_now = now["convergence"]["units"]["U1"]["rounds"]
    assert [(r["round"], r["convergence"]) for r in rounds_then] == [(1, "first")]
    assert [(r["round"], r["convergence"]) for r in rounds_now] == [(1, "first"), (2, "stalled")]
    assert now["reviews"]["rounds"] == {"U1": 2} and then["reviews"]["rounds"] == {"U1": 1}
