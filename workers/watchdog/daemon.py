"""The watchdog: silence becomes LOST, and a wait past its budget becomes a finding.

It folds the units projection from the log, keeps every unit's latest heartbeat from the
heartbeat bucket, and sweeps on a tick:

* a WORKING unit (not blocked, not terminal, not ready) whose last sign of life — its
  latest heartbeat, or its latest transition when that is later — is older than the
  project's lapse is marked LOST. The LOST transition is published with the expected
  last sequence of the unit's subject and an id derived from the unit's last event, so a
  watchdog killed at any point and restarted can neither mark a unit LOST twice nor,
  having refolded the log, miss one.
* a BLOCKED unit waiting longer than its reason's budget raises one ``wait-budget``
  finding, owned by whoever owns the blocker (never the waiting unit). The finding names
  the block (the id of the transition that opened it); the units projection records it,
  so it is raised once per block, across restarts too.

``sweep(now)`` takes the time as an argument so that tests (and a replay) can drive it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

import structlog
from loopbus.bus import Bus, BusError, read
from loopbus.projections import units as units_fold
from loopbus.projections.claims import lapse
from loopbus.projections.units import WAIT_BUDGET_CLASS, UnitView
from loopbus.schemas import Actor, Event, FindingRaised, project_subjects, utcnow
from loopbus.schemas.targets import BudgetTarget, CheckTarget, RecordTarget, Target
from loopbus.workers.runtime import DaemonContext
from loopbus.workers.units.checks import DeclaredChecks, declared_checks
from loopbus.workers.units.daemon import system_actor
from loopbus.workers.units.live import UnitsLive, answer_id, publish_move, raise_if_cancelled
from loopbus.workers.watchdog.heartbeats import Heartbeats
from loopbus.workers.watchdog.limits import Limits

log = structlog.get_logger()

LOST_SALT = "lost"
WAIT_SALT = "wait-budget"


def blocker_owner(view: UnitView, project: str, checks: DeclaredChecks) -> tuple[str, Target]:
    """(owner, target) of the party that owns what ``view`` is blocked on."""
    assert view.block is not None
    reason, subject = view.block.reason, view.block.subject
    if reason == "awaiting-operator":
        return "operator", RecordTarget(id=subject)
    if reason == "awaiting-dependency":
        return f"builder:{subject}", RecordTarget(id=subject)
    if reason == "awaiting-gate":
        return checks.owner(project, subject), CheckTarget(check=subject)
    return "standards", BudgetTarget(budget=subject)


def wait_budget_finding(
    view: UnitView,
    project: str,
    *,
    waited_s: float,
    budget_s: float,
    actor: Actor,
    checks: DeclaredChecks,
) -> FindingRaised:
    """The one finding a block past its budget raises, routed to the blocker's owner."""
    assert view.block is not None and view.block_id is not None
    owner, target = blocker_owner(view, project, checks)
    reason, subject = view.block.reason, view.block.subject
    return FindingRaised(
        id=answer_id(view.block_id, WAIT_SALT),
        project=project,
        actor=actor,
        producer="standards",
        target=target,
        severity="medium",
        criterion=f"wait-budget:{reason}",
        cls=WAIT_BUDGET_CLASS,
        message=(
            f"unit {view.unit} has waited {_human(waited_s)} {reason} on {subject}, past its "
            f"{_human(budget_s)} budget; {owner} owns what it waits on"
        ),
        evidence={
            "block": view.block_id,
            "reason": reason,
            "subject": subject,
            "waited_s": round(waited_s, 3),
            "budget_s": budget_s,
            "since": view.blocked_since.isoformat() if view.blocked_since else None,
        },
        unit=view.unit,
        slice=view.slice or None,
        owner=owner,
    )


class Watchdog:
    """The sweeping core; the daemon body runs :meth:`follow` and calls :meth:`sweep`."""

    def __init__(
        self,
        bus: Bus,
        limits: Limits | None = None,
        *,
        actor: Actor | None = None,
        checks: DeclaredChecks | None = None,
        projects: Sequence[str] = (),
        clock: Callable[[], datetime] = utcnow,
    ):
        self.bus = bus
        self.limits = limits or Limits()
        self.actor = actor or system_actor("watchdog")
        self.checks = checks or DeclaredChecks()
        self.projects = tuple(projects)
        self.clock = clock
        self.live = UnitsLive(folds=(units_fold.FOLD,))
        self.heartbeats = Heartbeats(bus, self.projects)
        self.caught_up = asyncio.Event()
        self._lost: dict[tuple[str, str], str] = {}  # LOST published for this last event
        self._raised: set[str] = set()  # blocks whose finding we published

    @property
    def subjects(self) -> list[str]:
        return [project_subjects(p) for p in self.projects] or ["loop.>"]

    async def open(self) -> None:
        """Load the heartbeats (every sweep needs them all)."""
        await self.heartbeats.open(self.live.notify)

    async def close(self) -> None:
        await self.heartbeats.close()

    async def follow(self, ctx: DaemonContext | None = None) -> None:
        """Fold the log for ever; :attr:`caught_up` is set once the fold reached its end."""
        start_last = await self.bus.stream_last_seq()
        if not await _has_any(self.bus, self.subjects):
            self.caught_up.set()
        async for record in read(self.bus, subjects=self.subjects, follow=True):
            if ctx is not None:
                ctx.last_seq = record.seq
            self.live.apply(record)
            if record.pending == 0 or record.seq >= start_last:
                self.caught_up.set()
            await self.live.notify()
            raise_if_cancelled()

    async def sweep(self, now: datetime | None = None) -> list[Event]:
        """Mark lapsed units LOST and raise due wait-budget findings, as of ``now``."""
        at = now or self.clock()
        published: list[Event] = []
        open_blocks: set[str] = set()
        for project in list(self.live.fold.projects):
            units = self.live.units(project)
            for view in list(units.units.values()):
                if view.block_id is not None:
                    open_blocks.add(view.block_id)
                try:
                    if view.state == "working":
                        event = await self._lapse(project, view, at)
                    elif view.state == "blocked":
                        event = await self._wait_budget(project, view, at)
                    else:
                        continue
                except BusError as exc:  # transient: the next sweep tries again
                    log.warning("watchdog.publish_failed", unit=view.unit, error=str(exc))
                    continue
                if event is not None:
                    published.append(event)
        self._raised &= open_blocks  # a closed block never needs its finding again
        return published

    async def _lapse(self, project: str, view: UnitView, now: datetime) -> Event | None:
        key = (project, view.unit)
        if view.last_event is None or self._lost.get(key) == view.last_event:
            return None
        lapse_s = self.limits.lapse_for(project)
        move = lapse(view, self.heartbeats.of(project, view.unit), lapse_s, now)
        if move is None:
            return None
        event = await publish_move(
            self.bus,
            move,
            project,
            self.actor,
            answer_id(view.last_event, LOST_SALT),
            self.live.expected(project, view.unit),
        )
        if event is None:  # the unit moved meanwhile: the next sweep judges the new state
            log.info("watchdog.lost_conflict", project=project, unit=view.unit)
            return None
        self._lost[key] = view.last_event
        log.info("watchdog.lost", project=project, unit=view.unit, lapse_s=lapse_s)
        return event

    async def _wait_budget(self, project: str, view: UnitView, now: datetime) -> Event | None:
        if view.block is None or view.block_id is None or view.wait_finding is not None:
            return None
        if view.block_id in self._raised:
            return None
        budget_s = self.limits.budget_for(view.block.reason)
        waited_s = units_fold.waited(view, now)
        if waited_s <= budget_s:
            return None
        finding = wait_budget_finding(
            view,
            project,
            waited_s=waited_s,
            budget_s=budget_s,
            actor=self.actor,
            checks=self.checks,
        )
        await self.bus.publish(finding)  # a repeat (same block, same id) is de-duplicated
        self._raised.add(view.block_id)
        log.info("watchdog.wait_budget", project=project, unit=view.unit, owner=finding.owner)
        return finding


async def _has_any(bus: Bus, subjects: Sequence[str]) -> bool:
    async for _record in read(bus, subjects=subjects):
        return True
    return False


def _human(seconds: float) -> str:
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def tick_for(limits: Limits) -> float:
    """How often to sweep: a quarter of the shortest limit, between 50 ms and 5 s."""
    return min(max(limits.shortest() / 4, 0.05), 5.0)


async def run(
    ctx: DaemonContext,
    limits: Limits,
    *,
    repo: Path | None = None,
    projects: Sequence[str] = (),
) -> None:
    """The daemon body: fold, then sweep every tick until asked to stop."""
    dog = Watchdog(
        ctx.bus,
        limits,
        actor=system_actor(ctx.name),
        checks=declared_checks(repo),
        projects=projects,
    )
    await dog.open()
    follower = asyncio.create_task(dog.follow(ctx))
    tick = tick_for(limits)
    try:
        while not ctx.stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ctx.stop.wait(), tick)
            if follower.done():
                follower.result()  # a crashed fold is a crashed daemon: let the supervisor see
            stopped = dog.heartbeats.failed()
            if stopped is not None:  # never sweep on a dead heartbeat feed: exit, restart
                raise RuntimeError(f"heartbeat feed stopped: {stopped!r}")
            if dog.caught_up.is_set():
                await dog.sweep()
            raise_if_cancelled()
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await follower
        await dog.close()
