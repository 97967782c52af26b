"""Holding projects for one replica of a daemon: members, takings, renewals, releases.

The shell half of sharing projects between replicas (the pure half, and why it is safe,
is :mod:`workers.leases.share`). In the kernel package because it publishes. Every round
(a third of the lease's lifetime) the replica

* says it is alive: ``replica.<daemon>.<member>`` in the workers bucket, with the time;
  the members are the keys of that daemon fresher than one lease lifetime;
* reads the last lease event of every project it knows, and publishes what
  :func:`~workers.leases.share.plan` asks for, each conditionally on the project's lease
  subject.

The kernel asks :meth:`ProjectShare.holds` before each decision. A replica stops deciding
for a project a third of a lifetime before its lease can lapse, so a replica that is
paused or cut off has stopped before another one may take the project over; a renewal
that finds the subject moved means it was taken over, and the project is dropped at once.
On a clean stop every project is released, so the others take them on their next round
instead of after a lapse.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import assert_never

import msgspec
import structlog

from bus import WORKER_BUCKET, Bus, BusError, TransitionConflict
from schemas import Actor, decode_event, utcnow
from schemas.leases import LeaseReleased, LeaseRenewed, LeaseTaken
from schemas.subjects import lease_subject
from workers.leases.names import holder_name, item_token
from workers.leases.share import Seen, Step, plan

log = structlog.get_logger()

ROUNDS_PER_TTL = 3
FORGET_AFTER_TTLS = 10
"""A member line this many lease lifetimes old is deleted (every restart leaves one)."""


class Member(msgspec.Struct):
    """A replica's line in the workers bucket: who it is and when it last said so."""

    holder: str
    at: float
    serves: list[str] = []
    """The projects this replica serves (a repository-bound daemon's); empty: every one."""


def member_prefix(daemon: str) -> str:
    return f"replica.{daemon}"


class ProjectShare:
    """The projects this replica holds (see the module docstring)."""

    def __init__(
        self,
        bus: Bus,
        daemon: str,
        actor: Actor,
        ttl_s: float,
        *,
        holder: str | None = None,
        serves: Iterable[str] = (),
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.bus = bus
        self.daemon = daemon
        self.actor = actor
        self.ttl_s = ttl_s
        self.holder = holder or holder_name(actor)
        self.clock = clock
        self.serves = sorted(serves)
        """The projects this replica may hold (empty: any): it shares a project only with
        the replicas that serve it, so a process serving other repositories under the same
        daemon name never wins a project it cannot act on."""
        self.held: dict[str, tuple[int, datetime]] = {}
        """Project -> (sequence of this holder's last lease event, when to stop deciding)."""
        self.gained: Callable[[str, int], None] = lambda _project, _seq: None
        """Called with a project this replica took and the sequence of its taking."""
        self.rounds = 0
        self._key = f"{member_prefix(daemon)}.{item_token(self.holder)[:20]}"

    def holds(self, project: str, now: datetime) -> bool:
        """True while this replica may decide for ``project``."""
        held = self.held.get(project)
        return held is not None and now < held[1]

    async def run(self, projects: Callable[[], Iterable[str]]) -> None:
        """Rounds for ever (a kernel sensor), over the projects ``projects()`` names."""
        while True:
            try:
                await self.round(projects())
            except BusError as exc:  # the next round may get through before a lease lapses
                log.warning("share.round_failed", error=str(exc))
            await asyncio.sleep(self.ttl_s / ROUNDS_PER_TTL)

    async def round(self, projects: Iterable[str]) -> list[Step]:
        """One round: say this replica is alive, then take, renew and release."""
        members = await self.serving()
        seen = {project: await self._seen(project) for project in projects}
        steps: list[Step] = []
        now = self.clock()
        for project in sorted(seen):
            who = [holder for holder, serves in members if not serves or project in serves]
            steps += plan({project: seen[project]}, who, self.holder, now)
        for step in steps:
            await self._carry(step)
        self.rounds += 1
        return steps

    async def members(self) -> list[str]:
        """The live replicas of this daemon (this one included), after saying it is one."""
        return [holder for holder, _serves in await self.serving()]

    async def serving(self) -> list[tuple[str, list[str]]]:
        """The live replicas of this daemon (this one first) and the projects each serves
        (empty: every one), after saying this one is alive."""
        bucket = await self.bus.bucket(WORKER_BUCKET)
        line = Member(self.holder, time.time(), self.serves)
        await bucket.put(self._key, msgspec.json.encode(line))
        found = [(self.holder, self.serves)]
        for key in await bucket.keys(f"{member_prefix(self.daemon)}.*"):
            entry = await bucket.get(key)
            if entry is None or key == self._key:
                continue
            try:
                member = msgspec.json.decode(entry.value, type=Member)
            except msgspec.DecodeError:
                continue
            age = time.time() - member.at
            if age <= self.ttl_s:
                found.append((member.holder, member.serves))
            elif age > FORGET_AFTER_TTLS * self.ttl_s:  # a killed replica's line: tidy it
                with contextlib.suppress(BusError):
                    await bucket.delete(key)
        return found

    async def leave(self) -> None:
        """Release every project and leave the members (a clean stop)."""
        for project, (seq, _until) in list(self.held.items()):
            await self._carry(Step(project, "release", seq))
        with contextlib.suppress(BusError):
            bucket = await self.bus.bucket(WORKER_BUCKET)
            await bucket.delete(self._key)

    def _subject(self, project: str) -> str:
        return lease_subject(project, "project", self.daemon)

    async def _seen(self, project: str) -> Seen:
        seq = await self.bus.last_subject_seq(self._subject(project))
        if not seq:
            return Seen()
        _subject, data = await self.bus.get(seq)
        try:
            event = decode_event(data)
        except Exception:  # an undecodable record holds nothing
            return Seen(seq)
        # Only the system's lease facts count (the log refuses others; a fold skips them).
        if isinstance(event, LeaseTaken | LeaseRenewed) and event.actor.role == "system":
            return Seen(seq, event.holder, event.at + timedelta(seconds=event.ttl_s))
        return Seen(seq)

    async def _carry(self, step: Step) -> None:
        project = step.project
        now = self.clock()
        event: LeaseTaken | LeaseRenewed | LeaseReleased
        match step.action:
            case "take":
                event = LeaseTaken(
                    project=project,
                    actor=self.actor,
                    at=now,
                    work="project",
                    item=self.daemon,
                    holder=self.holder,
                    ttl_s=self.ttl_s,
                    what=f"{self.daemon} on {project}",
                    lapsed=step.lapsed,
                )
            case "renew":
                event = LeaseRenewed(
                    project=project,
                    actor=self.actor,
                    at=now,
                    work="project",
                    item=self.daemon,
                    holder=self.holder,
                    ttl_s=self.ttl_s,
                )
            case "release":
                # Stop deciding first: nothing is decided for it after the release is out.
                self.held.pop(project, None)
                event = LeaseReleased(
                    project=project,
                    actor=self.actor,
                    work="project",
                    item=self.daemon,
                    holder=self.holder,
                    how="given-up",
                )
            case _:
                assert_never(step.action)
        try:
            ack = await self.bus.publish_transition(event, step.seq)
        except TransitionConflict:
            if self.held.pop(project, None) is not None:
                log.warning("share.project_lost", project=project, holder=self.holder)
            return
        if step.action == "release":
            log.info("share.project_released", project=project, holder=self.holder)
            return
        # Stop one round before the lease could lapse (a pause or a slow bus then stops
        # this replica's decisions before another replica may take the project).
        stop_at = now + timedelta(seconds=self.ttl_s * (1 - 1 / ROUNDS_PER_TTL))
        gained = project not in self.held
        self.held[project] = (ack.seq, stop_at)
        if gained:
            log.info("share.project_taken", project=project, holder=self.holder)
            self.gained(project, ack.seq)
