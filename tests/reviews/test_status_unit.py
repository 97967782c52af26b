"""`loopbus status --project P --unit U`: rounds, finding sets, verdict and rung, read from
the projector's materialised view (the real projector, the real CLI as a subprocess)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
from reviewkit import (
    SYSTEM,
    Scripted,
    code_finding,
    config_of,
    count,
    ready,
    running,
    setup_repo,
    verdict,
    wait_log,
)

from bus import Bus, Views
from bus.views import CHECKPOINT_KEY, Checkpoint
from projections import convergence as conv
from schemas import UnitPlanned, UnitTransitioned
from workers.projector.daemon import ProjectorDaemon
from workers.reviewer.daemon import Reviewer

ROOT = Path(__file__).resolve().parents[2]


async def materialised(bus: Bus, project: str, seq: int, timeout: float = 60) -> None:
    """Wait (by watching the KV entry, not by sleeping) until the convergence view of
    ``project`` has folded through ``seq``."""
    views = await Views.open(bus)
    async with asyncio.timeout(timeout):
        async for stored_seq in views.watch_seq(project, conv.FOLD):
            if stored_seq >= seq:
                return


async def checkpointed(bus: Bus, seq: int, timeout: float = 60) -> None:
    """Wait (watching the projector's checkpoint key) until it covers ``seq``."""
    views = await Views.open(bus)
    async with asyncio.timeout(timeout):
        async for entry in views.bucket.watch(CHECKPOINT_KEY):
            value = entry.value if entry is not None else None
            if value and msgspec.json.decode(value, type=Checkpoint).seq >= seq:
                return


def status(nats_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopbus.cli", "status", *args, "--nats-url", nats_url],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=os.environ | {"LOOPBUS_NATS_URL": nats_url},
    )


async def test_status_unit_shows_rounds_sets_verdict_and_rung(
    bus: Bus, nats_url: str, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """A reject and a second review with one finding fewer show as two rounds with their
    finding and blocking sets, the verdict and the rung, exactly as docs/review.md shows."""
    agent = Scripted(agent_dir)
    blocker = code_finding("src/app.py", 2, criterion="C1")
    nit = code_finding("src/app.py", 2, severity="low", criterion="naming")
    agent.plan([verdict("reject", blocker, nit), verdict("reject", blocker)])
    repo = setup_repo(tmp_path, project, {"command": agent.command, "roster": ["alice", "bob"]})
    head1 = repo.commit({"src/app.py": "def total(xs):\n    return sum(xs)\n"}, parent=repo.base)
    head2 = repo.commit({"src/app.py": "def total(xs):\n    return sum(list(xs))\n"}, parent=head1)
    async with running(bus, Reviewer(config_of(repo))):
        await ready(bus, project, "U1", head1)
        await wait_log(bus, project, count(UnitTransitioned, by="returned"))
        await ready(bus, project, "U1", head2, first=False)
        await wait_log(bus, project, count(UnitTransitioned, 2, by="returned"))
    last = await bus.last_subject_seq(f"loop.{project}.>")
    async with running(bus, ProjectorDaemon(bus)):
        await materialised(bus, project, last)
    done = status(nats_url, "--project", project, "--unit", "U1", "--json")
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    assert (document["unit"], document["state"], document["verdict"]) == ("U1", "working", "reject")
    assert (document["rung"], document["tactic"], document["reviewer"]) == (1, "repair", "bob")
    key, nit_key = "code:src/app.py:2-2|high|C1", "code:src/app.py:2-2|low|naming"
    rounds = [(r["round"], r["finding_keys"], r["blocking_keys"]) for r in document["rounds"]]
    assert rounds == [(1, [key, nit_key], [key]), (2, [key], [key])]
    assert [(r["convergence"], r["action"]) for r in document["rounds"]] == [
        ("first", "continue"),
        ("converging", "continue"),
    ]
    assert [f["target"] for f in document["open_findings"]] == ["code:src/app.py:2-2"]
    text = status(nats_url, "--project", project, "--unit", "U1")
    assert text.returncode == 0, text.stderr
    shown = text.stdout.replace(project, "demo")
    shown = shown.replace(head1[:12], "67f34817b430").replace(head2[:12], "75c4c17e2b04")
    assert shown.strip() == docs_example().strip()


def docs_example() -> str:
    """The `loopbus status --unit` example in docs/review.md."""
    text = (ROOT / "docs" / "review.md").read_text()
    match = re.search(r"```text\n(unit U1 of demo:.*?)```", text, re.DOTALL)
    assert match is not None, "docs/review.md lost its status --unit example"
    return match.group(1)


async def test_status_of_an_unknown_unit_is_one_line(bus: Bus, nats_url: str, project: str) -> None:
    """An unknown unit of a known project is a one-line error naming it, exit 2 (a usage
    error, like an unknown project), no traceback."""
    await bus.publish(UnitPlanned(project=project, actor=SYSTEM, slice="S1", unit="U1"))
    last = await bus.last_subject_seq(f"loop.{project}.>")
    async with running(bus, ProjectorDaemon(bus)):
        await checkpointed(bus, last)
    done = await asyncio.to_thread(status, nats_url, "--project", project, "--unit", "NOPE")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"loopbus: error: --unit 'NOPE': project {project} has no such unit (units: U1)"
    ]


async def test_an_unknown_unit_while_the_projector_lags_says_how_far_it_is(
    bus: Bus, nats_url: str, project: str
) -> None:
    """With no projector folding, a unit planned a moment ago is not in the views yet: the
    error says so, with the projector's checkpoint and the project's last event, rather
    than only that the unit does not exist."""
    await bus.publish(UnitPlanned(project=project, actor=SYSTEM, slice="S1", unit="U1"))
    last = await bus.last_subject_seq(f"loop.{project}.>")
    done = await asyncio.to_thread(status, nats_url, "--project", project, "--unit", "U1")
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    prefix = f"loopbus: error: --unit 'U1': project {project} has no such unit (units: none yet)"
    assert line.startswith(prefix + "; the projector has folded the log to seq ")
    assert line.endswith(
        f" and the project's last event is seq {last}: a unit planned just now shows once it"
        " catches up"
    )
