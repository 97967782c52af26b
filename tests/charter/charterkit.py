"""Helpers of the charter tests: charters, claims, the charter daemon, the log."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelkit import running

from bus import Bus, read
from schemas import Actor, Event, project_subjects
from schemas.charter import (
    Charter,
    CharterApprove,
    CharterCriterion,
    CharterSubmission,
    RunBudgets,
)
from workers.agents.config import RepoConfig
from workers.charter.daemon import CharterDaemon
from workers.kernel import Kernel

OPERATOR = Actor(role="operator", principal="olive")
WAIT_S = 60.0


def charter(
    cid: str = "calc-v1",
    *,
    criteria: tuple[CharterCriterion, ...] = (
        CharterCriterion(id="adds", text="it adds", test="tests/test_calc.py::test_add"),
    ),
    budgets: RunBudgets | None = None,
) -> Charter:
    return Charter(id=cid, title="a calculator", criteria=criteria, budgets=budgets or RunBudgets())


def submission(project: str, c: Charter) -> CharterSubmission:
    return CharterSubmission(project=project, actor=OPERATOR, charter=c)


def approval(project: str, sub: CharterSubmission) -> CharterApprove:
    return CharterApprove(
        project=project, actor=OPERATOR, charter=sub.charter.id, submission=sub.id, why="go"
    )


@asynccontextmanager
async def charter_daemon(
    bus: Bus, project: str, tick_s: float = 0.2, *, repo: Path | None = None
) -> AsyncIterator[Kernel]:
    """The charter daemon for ``project``; given ``repo``, it reads criterion tests there
    (as ``loopbus up --repo`` runs it)."""
    configs = {project: RepoConfig(project=project, repo=str(repo))} if repo else {}
    daemon = CharterDaemon(projects=[project], tick_s=tick_s, configs=configs)
    async with running(bus, daemon) as kernel:
        yield kernel


async def log_of(bus: Bus, project: str) -> list[Event]:
    records = read(bus, subjects=[project_subjects(project)])
    return [r.event async for r in records if r.event is not None]


async def wait_for(bus: Bus, project: str, kind: type, timeout: float = WAIT_S) -> Any:
    """The first event of ``kind`` on the project's log (waiting for it, bounded)."""

    async def scan() -> Any:
        async for record in read(bus, subjects=[project_subjects(project)], follow=True):
            if isinstance(record.event, kind):
                return record.event
        return None

    return await asyncio.wait_for(scan(), timeout)


async def wait_until(
    bus: Bus, project: str, predicate: Callable[[list[Event]], bool], timeout: float = WAIT_S
) -> list[Event]:
    """The project's log once ``predicate`` holds of it (waiting for it, bounded)."""
    events: list[Event] = []

    async def scan() -> list[Event]:
        async for record in read(bus, subjects=[project_subjects(project)], follow=True):
            if record.event is not None:
                events.append(record.event)
                if predicate(events):
                    return events
        return events

    return await asyncio.wait_for(scan(), timeout)


@dataclass
class Result:
    code: int
    out: str
    err: str


def loopbus(*args: str, env: dict[str, str] | None = None) -> Result:
    """Run one real ``loopbus`` command line to completion."""
    done = subprocess.run(
        [sys.executable, "-m", "loopbus.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ | (env or {}),
        stdin=subprocess.DEVNULL,
    )
    return Result(done.returncode, done.stdout, done.stderr)
