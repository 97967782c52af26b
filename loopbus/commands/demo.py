"""``loopbus demo``: a whole run on a scaffolded project, charter to charter met.

It scaffolds the ``loopbus init`` project in a temporary directory, starts an embedded
server and every daemon there (as ``loopbus up`` does), submits the project's charter and
approves it as an operator would, and prints the timeline as it happens: the scripted
planner plans slice 1, its units are built, reviewed and merged, the planner plans slice
2 with a contract (a new check and two new criterion tests) that lands on trunk before
its units start, and the run ends once every criterion of the charter holds on trunk. It
exits 0 when the run ended with the charter met and every slice closed with every unit
done and the increment booting, 1 otherwise (or past ``--timeout``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bus import Bus, EmbeddedServer, connect, ensure_log, free_port, read
from bus.creds import default_file, load_credential
from loopbus import scaffold
from loopbus.charter_file import parse_charter
from loopbus.charter_render import run_lines
from loopbus.claiming import publish_claim
from loopbus.errors import LoopbusError
from loopbus.run_view import load_run
from loopbus.settings import DEFAULT_HEARTBEAT_LAPSE
from loopbus.supervisor import Supervisor, UpSettings
from loopbus.terminal_text import one_line
from loopbus.timeline import Timeline
from schemas import Actor, project_subjects
from schemas.charter import CharterApprove, CharterSubmission, RunEnded
from schemas.merges import TrunkAdvanced
from schemas.slices import SliceClosed, UnitDispatched
from schemas.verify import SliceShipJudged
from workers.repository import files_changed
from workers.runtime import configure_logging

if TYPE_CHECKING:
    from workers.agents.sandbox import SandboxExecutor


def run(args: argparse.Namespace) -> int:
    configure_logging(os.environ.get("LOOPBUS_LOG_LEVEL", "error"))
    root = Path(tempfile.mkdtemp(prefix="loopbus-demo-"))
    try:
        return asyncio.run(demo(root, args.timeout))
    finally:
        if args.keep:
            print(f"loopbus: the demo's project, log and daemon logs are in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


DEMO_ROLES = ("admin", "system", "operator", "reader")


async def _no_sandbox() -> str | None:
    """Why the demo runs its agents without a sandbox on this machine, or ``None``.

    The demo's agents are loopbus's own scripts, so where no sandbox can be made (a user
    without bubblewrap or an engine) or the one that can cannot reach loopbus's interpreter
    (see :func:`_fallback`) it runs them bare and says so rather than stall: the first
    command of the README must work anywhere. A project of the user's never falls back.
    """
    from workers.agents.runner import choose
    from workers.agents.sandbox_config import AgentsConfig

    executor, why = await choose(AgentsConfig())
    return await _fallback(executor, why)


async def _fallback(executor: SandboxExecutor | None, why: str) -> str | None:
    """Why the demo runs its agents bare given ``choose``'s answer (``executor``, else
    ``why`` there is none), or ``None`` when ``executor`` runs them.

    A sandbox that starts may still fail loopbus's interpreter, which the demo's agents
    run: it runs that interpreter there first. Only a root daemon's uid-only fence refused
    that interpreter because a folder on its way is closed to other users (a pyenv Python
    under ``/root``) is a reason to run bare; any other failure (loopbus importable only
    through ``PYTHONPATH``, which no agent inherits; a probe that did not finish) would fail
    bare too, or hide a fault, so it is an error naming the problem and its fix.
    """
    from workers.agents.environment import closed_to_others
    from workers.agents.local import LocalExecutor
    from workers.agents.runner import shipped_agents_problem

    if executor is None:
        return why
    problem = await shipped_agents_problem(executor)
    if problem is None:
        return None
    uid_only = isinstance(executor, LocalExecutor) and await executor.uid_only()
    return _closed_interpreter(problem, uid_only=uid_only, closed=closed_to_others(sys.executable))


def _closed_interpreter(problem: str, *, uid_only: bool, closed: Path | None) -> str:
    """``problem`` (the probe's failure) when running bare is the answer to it: a uid-only
    fence refused the interpreter for a closed folder (the launcher's line naming it, or the
    system's ``Permission denied`` for the interpreter while a folder on its way is closed);
    else a :class:`LoopbusError` with the fix that matches it. See :func:`_fallback`."""
    from workers.agents.launch import UID_DENIED

    refused = f"{sys.executable}: Permission denied" in problem and closed is not None
    if uid_only and UID_DENIED in problem:
        return problem
    if uid_only and refused:
        return f"{problem} ({sys.executable} lies behind {closed}, closed to other users)"
    raise LoopbusError(
        f"loopbus demo cannot run its own agents in the agent sandbox: {problem}. "
        + _probe_fix(problem)
    )


def _probe_fix(problem: str) -> str:
    """What to do about the probe's ``problem``, as far as its words tell."""
    if re.search(r"ModuleNotFoundError: No module named 'loopbus[.']", problem):
        return (
            f"They run {sys.executable} -m loopbus.scripted... with none of this shell's "
            "environment (no PYTHONPATH): install loopbus into that interpreter "
            "(pip install -e . in loopbus's checkout, or pip install loopbus), then run the demo "
            "again"
        )
    if "did not finish within" in problem:
        return (
            "A sandbox that does not answer is a fault to find, not a reason to run bare: "
            "run the demo again once the machine is less busy, or see why a sandboxed "
            f"{sys.executable} -c 'import loopbus.scripted' hangs here"
        )
    return (
        f"Make the agent sandbox able to run {sys.executable} -c 'import loopbus.scripted' "
        "(docs/agents.md), then run the demo again"
    )


async def demo(root: Path, timeout: float) -> int:
    started = time.monotonic()

    def say(line: str) -> None:
        # the timeline quotes what the agents wrote: shown inert (terminal_text)
        print(f"[{time.monotonic() - started:5.1f}s] {one_line(line)}", flush=True)

    no_sandbox = await _no_sandbox()
    if no_sandbox is not None:
        say(
            f"warning: no agent sandbox here can run the demo's agents ({no_sandbox}); the "
            'demo runs loopbus\'s own scripted agents with [agents] sandbox = "none" - your '
            "agents need bubblewrap or a Docker engine (docs/agents.md)"
        )
    repo = scaffold.write(root / scaffold.PROJECT, unsandboxed=no_sandbox is not None)
    say(f"scaffolded project {scaffold.PROJECT} in {repo} (what `loopbus init` writes)")
    server = EmbeddedServer(root / "data", port=free_port())
    await server.start()
    supervisor: Supervisor | None = None
    running: asyncio.Task[None] | None = None
    # The demo's server requires credentials as `loopbus up`'s does: the log is made with
    # the admin credential, the daemons run as system, the charter is an operator's claim
    # and the timeline is read with the read-only credential.
    creds = {role: load_credential(default_file(root / "data", role)) for role in DEMO_ROLES}
    admin = await connect(server.url, name="loopbus-demo-admin", creds=creds["admin"])
    try:
        await ensure_log(admin.js)
    finally:
        await admin.close()
    bus = await connect(server.url, name="loopbus-demo", creds=creds["reader"])
    operator_bus = await connect(server.url, name="loopbus-demo-operator", creds=creds["operator"])
    closed: list[SliceClosed] = []
    try:
        settings = UpSettings(
            nats_url=server.url,
            data_dir=root / "data",
            heartbeat_lapse=DEFAULT_HEARTBEAT_LAPSE,
            repo=repo,
            trunk=scaffold.TRUNK,
            creds=default_file(root / "data", "system"),
            server_log=server.log_file,
        )
        supervisor = Supervisor(settings)
        running = asyncio.create_task(supervisor.run())
        say(f"NATS at {server.url}; daemons: {', '.join(s.name for s in supervisor.specs)}")
        charter = parse_charter((repo / scaffold.CHARTER_FILE).read_text(), scaffold.CHARTER_FILE)
        operator = Actor(role="operator", principal=creds["operator"].principal)
        submission = CharterSubmission(project=scaffold.PROJECT, actor=operator, charter=charter)
        await publish_claim(operator_bus, submission)
        await publish_claim(
            operator_bus,
            CharterApprove(
                project=scaffold.PROJECT,
                actor=operator,
                charter=charter.id,
                submission=submission.id,
                why="the demo's scope: a calculator in two slices",
            ),
        )
        say(
            f"charter {charter.id} submitted and approved by the operator: "
            f"{len(charter.criteria)} criteria, budgets {charter.budgets.wall_clock} and "
            f"{charter.budgets.slices} slices"
        )
        try:
            ended = await asyncio.wait_for(follow(bus, repo, say, closed), timeout)
        except TimeoutError:
            say(f"the run did not end after {timeout:g}s: see the daemon logs with --keep")
            return 1
        view = await load_run(bus, scaffold.PROJECT)
        took = (
            (view.ended_at - view.approved_at).total_seconds()
            if view.ended_at and view.approved_at
            else None
        )
        summary = run_lines(view, took)
    finally:
        if supervisor is not None and running is not None:
            supervisor.stopping.set()
            with contextlib.suppress(Exception):
                await running
        await operator_bus.close()
        await bus.close()
        server.stop()
    for line in summary:
        print(f"  {one_line(line)}")
    clean = [
        c for c in closed if c.boot.outcome == "pass" and not (c.failed or c.lost or c.blocked)
    ]
    ok = ended.reason == "met" and len(closed) >= 2 and len(clean) == len(closed)
    say(
        f"the run ended with the charter met: {len(closed)} slices closed, every unit done "
        "and the increment booting"
        if ok
        else f"FAILED: the run ended {ended.reason} ({ended.detail}); {len(clean)} of "
        f"{len(closed)} slices closed clean"
    )
    return 0 if ok else 1


async def follow(bus: Bus, repo: Path, say: Any, closed: list[SliceClosed]) -> RunEnded:
    """Print the timeline until the run ends and every closed slice has its SHIP verdict
    (the dispatcher judges it just after the close); return the ending fact. Each closed
    slice's fact is added to ``closed``."""
    merged: list[tuple[str, str, str]] = []  # (unit, base, head) of units merged so far
    bases: dict[str, str] = {}
    # How many units had merged when each unit was dispatched: only a unit merged after
    # that was merged *with* this one (an earlier one is in its base already).
    merged_before: dict[str, int] = {}

    def shared(event: TrunkAdvanced) -> list[tuple[str, list[str]]]:
        mine = set(files_changed(repo, bases.get(event.unit, event.previous), event.commit))
        found = []
        for unit, base, head in merged[merged_before.get(event.unit, 0) :]:
            both = sorted(mine & set(files_changed(repo, base, head)))
            if both:
                found.append((unit, both))
        merged.append((event.unit, bases.get(event.unit, event.previous), event.commit))
        return found

    timeline = Timeline(shared)
    ended: RunEnded | None = None
    judged: set[str] = set()
    async for record in read(bus, subjects=[project_subjects(scaffold.PROJECT)], follow=True):
        event = record.event
        if event is None:
            continue
        if isinstance(event, UnitDispatched) and event.base:
            bases[event.unit] = event.base
            merged_before[event.unit] = len(merged)
        for line in timeline.lines(event):
            say(line)
        if isinstance(event, SliceClosed):
            closed.append(event)
        if isinstance(event, SliceShipJudged):
            judged.add(event.slice)
        if isinstance(event, RunEnded):
            ended = event
        if ended is not None and {c.slice for c in closed} <= judged:
            return ended
    raise RuntimeError("the log ended")  # pragma: no cover - follow never ends
