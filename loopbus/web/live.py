"""One project's states for the page, kept live: the projector's views, then the log.

A :class:`LiveProject` starts from what ``status`` reads (every projection's view in KV,
with the stream sequence each one was folded through), then follows the project's subjects
on the log from there, applying each event with the same folds (``FOLDS``) to the views it
is newer than. So the page shows exactly what ``status`` would, a moment earlier (it does
not wait for the projector's next flush), and there is no second source of truth: the same
pure folds over the same log. Each folded record wakes the server-sent-event streams.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import structlog

from bus import Bus, Record, Views, ViewUnreadable, read
from bus.view_layout import VIEW_PREFIX
from bus.view_scan import scan
from projections import FOLDS, apply_guarded
from schemas import Event, FindingRaised, project_subjects

log = structlog.get_logger()

YIELD_EVERY = 256
"""Records folded between two turns given to the server's other tasks (a long backlog
must not starve the HTTP handlers)."""
RESTORE_TRIES = 3


@dataclass
class LiveProject:
    """The states of one project, the sequence they are folded through, and a version that
    changes with every folded record (what the event streams wait on)."""

    project: str
    states: dict[str, Any] = field(default_factory=dict)
    seqs: dict[str, int] = field(default_factory=dict)
    seq: int = 0
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    version: int = 0
    task: asyncio.Task[None] | None = None
    failures: int = 0

    async def start(self, bus: Bus) -> None:
        await self.restore(bus)
        self.task = asyncio.create_task(self.follow(bus), name=f"page-follow-{self.project}")

    async def restore(self, bus: Bus) -> None:
        """Every view of the project as the projector last wrote it (``status --limit 0``).

        The read is retried while the projector's checkpoint moves under it, so the views
        come from one flush when the projector is not mid-write."""
        views = await Views.open(bus)
        found: dict[str, Any] = {}
        for _ in range(RESTORE_TRIES):
            before = await views.checkpoint()
            found = await views.read_project(self.project, FOLDS, limit=None)
            if await views.checkpoint() == before:
                break
        for fold in FOLDS:
            if fold.name in found:
                state, assembled = found[fold.name]
                self.states[fold.name], self.seqs[fold.name] = state, assembled.seq or 0
            else:  # never written, or being rebuilt: fold it from the log
                self.states[fold.name], self.seqs[fold.name] = fold.initial(), 0
        self.seq = max(self.seqs.values(), default=0)
        log.info("page.restored", project=self.project, seqs=self.seqs)

    async def follow(self, bus: Bus) -> None:
        """Fold the project's records as they come; a read that fails (the bus gone for
        longer than its retries) is started again from where the states are."""
        while True:
            try:
                await self._follow(bus)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("page.follow_failed", project=self.project, error=str(exc))
                await asyncio.sleep(1.0)

    async def _follow(self, bus: Bus) -> None:
        start = min(self.seqs.values(), default=0) + 1
        count = 0
        async for record in read(
            bus, subjects=[project_subjects(self.project)], start_seq=start, follow=True
        ):
            self.apply(record)
            count += 1
            if record.pending == 0 or count % YIELD_EVERY == 0:
                await self.notify()
                await asyncio.sleep(0)

    def apply(self, record: Record) -> None:
        """Fold one record into every view it is newer than."""
        event = record.event
        if event is not None:
            for fold in FOLDS:
                if record.seq > self.seqs[fold.name]:
                    self.states[fold.name], failure = apply_guarded(
                        fold, self.states[fold.name], event
                    )
                    self.seqs[fold.name] = record.seq
                    if failure is not None:
                        self.failures += 1
        self.seq = max(self.seq, record.seq)

    async def notify(self) -> None:
        async with self.changed:
            self.version += 1
            self.changed.notify_all()

    async def wait_change(self, seen: int, timeout: float) -> int:
        """The version once it differs from ``seen`` (or after ``timeout``, unchanged)."""
        async with self.changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait_for(lambda: self.version != seen), timeout)
            return self.version

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task


@dataclass
class Projects:
    """The projects the page has been asked about, each kept live once opened."""

    bus: Bus
    limit: int = 32
    live: dict[str, LiveProject] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def get(self, project: str) -> LiveProject:
        async with self.lock:
            found = self.live.get(project)
            if found is None:
                if len(self.live) >= self.limit:
                    oldest = next(iter(self.live))
                    await self.live.pop(oldest).stop()
                found = self.live[project] = LiveProject(project)
                try:
                    await found.start(self.bus)
                except BaseException:
                    self.live.pop(project, None)
                    raise
        return found

    async def known(self) -> list[str]:
        """Every project the projector has written a view of."""
        bucket = (await Views.open(self.bus)).bucket.name
        names: set[str] = set()
        async for message in scan(self.bus, bucket, f"{VIEW_PREFIX}.*.units"):
            if not message.deleted:
                names.add(message.key.split(".")[1])
        return sorted(names | set(self.live))

    async def stop(self) -> None:
        for project in list(self.live.values()):
            await project.stop()


async def evidence_event(
    bus: Bus, project: str, finding_id: str, raised_at: datetime | None
) -> Record | None:
    """The ``finding.raised`` record of ``finding_id`` on the log (its evidence), read from
    just before it was raised (or from the start when that is unknown)."""
    start = raised_at - timedelta(seconds=5) if raised_at is not None else None
    subjects = [project_subjects(project)]  # an agent's finding is on its claim subject
    async for record in read(bus, subjects=subjects, start_time=start, follow=False):
        event: Event | None = record.event
        if isinstance(event, FindingRaised) and event.id == finding_id:
            return record
    return None


__all__ = ["LiveProject", "Projects", "ViewUnreadable", "evidence_event"]
