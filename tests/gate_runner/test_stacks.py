"""SIGUSR1 makes a daemon log what each of its tasks waits on, down to the innermost await,
and the daemon goes on: here a gate runner (a real process) mid-check."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path

from gate_repos import GitRepo, config
from test_gate_daemon import Daemon, answers, wait_for

from bus import Bus
from schemas import Actor
from schemas.gates import GateRunRequested, GateSuiteCompleted
from schemas.leases import LeaseTaken

SLOW_CHECK = (
    '\n[[check]]\nid = "slow"\n'
    "command = \"python -c 'import time; time.sleep(4)'\"\n"
    'parser = "exit-code"\ntimeout = 60\n'
)


def dumped(log: Path) -> tuple[dict[str, list[str]], list[str]] | None:
    """(task name -> await chain, thread names) of the first dump in ``log``, once whole."""
    lines = [json.loads(x) for x in log.read_text(errors="replace").splitlines() if x[:1] == "{"]
    heads = [i for i, line in enumerate(lines) if line.get("event") == "daemon.stacks"]
    if not heads:
        return None
    head = lines[heads[0]]
    after = lines[heads[0] + 1 :]
    tasks = {t["task"]: t["chain"] for t in after if t.get("event") == "daemon.stacks.task"}
    threads = [t["thread"] for t in after if t.get("event") == "daemon.stacks.thread"]
    if len(tasks) < head["tasks"] or len(threads) < head["threads"]:
        return None  # still being written
    return tasks, threads


async def test_sigusr1_logs_each_tasks_await_chain_and_the_daemon_goes_on(
    bus: Bus,
    git: Callable[[str], GitRepo],
    nats_url: str,
    tmp_path: Path,
    project: str,
    system: Actor,
) -> None:
    repo = git("repo")
    repo.commit({"loopbus.toml": config(project, SLOW_CHECK), "README": "one\n"})
    log = tmp_path / "daemon.log"
    runner = Daemon(repo.path, nats_url, tmp_path / "data", log)
    runner.start()
    try:
        ask = GateRunRequested(project=project, actor=system, commit=repo.head or "")
        await bus.publish(ask)
        await wait_for(bus, project, lambda e: isinstance(e, LeaseTaken) and e.work == "check")
        await asyncio.sleep(1.0)  # the check's process is running now
        os.kill(runner.pid, signal.SIGUSR1)
        async with asyncio.timeout(20):
            while (dump := dumped(log)) is None:
                await asyncio.sleep(0.2)
        tasks, threads = dump

        # The check's run, followed past the runner's own frame down to the process wait.
        running = [c for c in tasks.values() if any("in GateRunner._execute" in f for f in c)]
        assert running, f"no task is in the check's run: {tasks}"
        chain = running[0]
        at = next(i for i, f in enumerate(chain) if "in GateRunner._execute" in f)
        assert len(chain) > at + 1 and chain[-1].startswith("waits on "), chain
        # The suite the daemon performs waits on other tasks, and names them.
        suite = [c for c in tasks.values() if any("GateRunnerDaemon._run_suite" in f for f in c)]
        assert suite and suite[0][-1].startswith("waits on gather of task "), tasks
        assert suite[0][-1].removeprefix("waits on gather of task ") in tasks, suite[0]
        # Through ``async for`` into the generator it steps: the kernel's reader of the log.
        follow = [c for c in tasks.values() if any("in Kernel.follow" in f for f in c)]
        assert follow and any("bus/reader.py" in f and " in read" in f for f in follow[0]), follow
        assert "MainThread" in threads

        suite = await wait_for(bus, project, answers(ask.id))  # it went on
        assert isinstance(suite, GateSuiteCompleted) and suite.outcome == "pass"
    finally:
        runner.stop()
