"""Progress is not thrashing, end to end: a unit red at its gate in round 1, rejected by
review for something unrelated in round 2, approved in round 3 reaches DONE with nobody
acting — every daemon of the loop as `loopbus up` runs it, on a server of its own, a real
repository, and builder and reviewer commands written here."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

# The scripted builder lives beside the builder tests (their conftest puts it on the path).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "builder"))

from builderkit import ScriptedBuilder
from reviewkit import GitRepo, Scripted, code_finding, of, verdict, wait_log

from bus import Bus, EmbeddedServer, connect, ensure_log, free_port
from loopbus.supervisor import DAEMONS, Supervisor, UpSettings
from schemas import Actor, FindingRaised, UnitTransitioned
from schemas.reviews import RoundClosed, RungPromoted
from schemas.slices import (
    PlannedUnit,
    PlanSubmission,
    SliceClosed,
    SlicePlan,
)

pytestmark = pytest.mark.slow

CRITERION = "tests/test_criteria.py::test_total"
LOOP = ("dispatcher", "units", "gate-runner", "reviewer", "builder", "merger")
"""The daemons a unit needs to go from dispatch to DONE."""

TOML = """\
[project]
id = "{project}"

[[check]]
id = "tests"
command = "{python} -m pytest -q -p no:cacheprovider tests"
parser = "pytest"
timeout = 120
pending = [
    "{criterion}",
]

[build]
command = "{builder}"
roster = ["b1"]
timeout = "2m"
mode = "long"

[review]
command = "{reviewer}"
roster = ["r1"]
timeout = "1m"
oversight = "full"

[agents]
writable = ["{agents}"]
"""

FILES = {
    "calc/__init__.py": '"""A calculator."""\n',
    "calc/app.py": "def total(xs):\n    return 0\n",
    "tests/__init__.py": "",
    "tests/test_package.py": "import calc\n\n\ndef test_imports():\n    assert calc.__doc__\n",
    "tests/test_criteria.py": "from calc.app import total\n\n\ndef test_total():\n"
    "    assert total([1, 2]) == 3\n",
}


@contextlib.asynccontextmanager
async def loop_up(tmp_path: Path, repo: Path) -> AsyncIterator[Bus]:
    """A server of this test's own and the loop's daemons on it, as `loopbus up` runs them
    (the shared test server holds other tests' projects, which `up`'s daemons would serve)."""
    server = EmbeddedServer(tmp_path / "nats", port=free_port(), auth=None)
    await server.start()
    bus = await connect(server.url, name="unattended")
    await ensure_log(bus.js)
    settings = UpSettings(
        nats_url=server.url, data_dir=tmp_path / "data", heartbeat_lapse="5m", repo=repo,
        trunk="main",
    )  # fmt: skip
    supervisor = Supervisor(settings, specs=tuple(d for d in DAEMONS if d.name in LOOP))
    running = asyncio.create_task(supervisor.run())
    try:
        yield bus
    finally:
        supervisor.stopping.set()
        with contextlib.suppress(Exception):
            await running
        await bus.close()
        server.stop()


async def test_a_red_gate_then_an_unrelated_rejection_then_done_with_no_operator(
    tmp_path: Path, agent_dir: Path
) -> None:
    """Round 1 fails its gate (the criterion), round 2 fixes it and is rejected by review
    for an unrelated finding, round 3 fixes that: each round fixed what it was told, so the
    unit converges on rung 1 and is merged — at oversight full, where a stop would fail it."""
    builder = ScriptedBuilder(agent_dir / "builder")
    reviewer = Scripted(agent_dir)
    reviewer.plan(
        [verdict("reject", code_finding("calc/app.py", 2, criterion="readability")),
         verdict("approve")]
    )  # fmt: skip
    project = f"unattended{free_port()}"
    toml = TOML.format(
        project=project, python=sys.executable, criterion=CRITERION, builder=builder.command,
        reviewer=reviewer.command, agents=agent_dir,
    )  # fmt: skip
    cleared = toml.replace(f'    "{CRITERION}",\n', "")  # the unit's contract edit
    red = "def total(xs):\n    return len(xs)\n"  # the criterion fails
    summed = "def total(xs):\n    return sum(xs)\n"
    documented = 'def total(xs):\n    """Add them up."""\n    return sum(xs)\n'
    builder.plan(
        [
            {"write": {"calc/app.py": red, "loopbus.toml": cleared}},
            {"write": {"calc/app.py": summed}},
            {"write": {"calc/app.py": documented}},
        ]
    )
    git = GitRepo(tmp_path / "repo")
    git.commit({**FILES, "loopbus.toml": toml}, ref="refs/heads/main", message="skeleton")
    git.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    unit = PlannedUnit(
        id="U1", title="add the numbers", files=["calc/app.py"], criteria=[CRITERION]
    )
    plan = SlicePlan(slice="S1", units=[unit])
    planner = Actor(role="planner", principal="planner-1")
    async with loop_up(tmp_path, git.path) as bus:
        await bus.publish(PlanSubmission(project=project, actor=planner, plan=plan))
        events = await wait_log(bus, project, lambda es: of(SliceClosed, es), 420)
    [closed] = of(SliceClosed, events)
    assert (closed.done, closed.failed) == (["U1"], []), [
        (r.round, r.source, r.convergence, r.action, r.why) for r in of(RoundClosed, events)
    ]
    rounds = [(r.source, r.convergence, r.action, r.rung) for r in of(RoundClosed, events)]
    assert rounds == [
        ("gate", "first", "continue", 1),
        ("review", "converging", "continue", 1),
        ("review", "converging", "approved", 1),
    ]
    assert of(RungPromoted, events) == []
    assert of(UnitTransitioned, events, state="blocked") == []
    assert [f for f in of(FindingRaised, events) if f.owner == "operator"] == []
    assert len(builder.calls()) == 3
