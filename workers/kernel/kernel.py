"""The kernel's loop: follow, fold, decide once caught up, carry out, wait for our own events.

Two tasks share the state (asyncio, one thread, so a fold and a decision never interleave
mid-step): the *reader* folds every record as it arrives; the *actor* decides for each
project that changed, once the log has been read to its end at least once and the
project's own last publication has been folded back (its *barrier*). Deciding only on a
state that includes our own last facts is what makes a decision safe to repeat: a restart
re-folds the log and decides the same thing, and every fact carries an id derived from
what it answers, so a repeat is de-duplicated by the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

import structlog

from bus import Bus, Record, read
from bus.cancel import raise_if_cancelled
from projections import FoldFailure
from projections.intents import E, IntentOf
from schemas import Event, utcnow
from schemas.limits import bounded
from schemas.quarantine import fold_quarantine_record, is_quarantine_subject
from schemas.subjects import parse_subject
from workers.kernel.carry import Carrying
from workers.kernel.daemon import Daemon, World
from workers.kernel.project_share import ProjectShare
from workers.ref_fetch import RefFetch
from workers.runtime import Progress, cancel_all

log = structlog.get_logger()

LEAVE_WAIT_S = 5.0
"""How long a stopping replica spends releasing its projects (what is left lapses)."""

YIELD_EVERY = 64
"""Records folded in a row before the reader lets the daemon's other tasks run."""


def parse_project(subject: str) -> str:
    parsed = parse_subject(subject)
    return parsed.project if parsed is not None else "_unknown"


class Kernel(Carrying[E]):
    """Runs one :class:`Daemon` against the log until stopped (``E``: its effects)."""

    def __init__(
        self,
        bus: Bus,
        daemon: Daemon[E],
        *,
        clock: Callable[[], datetime] = utcnow,
        on_record: Callable[[int], None] | None = None,
        start_seq: int = 1,
        share_ttl_s: float | None = None,
    ) -> None:
        self.bus = bus
        self.daemon = daemon
        self.clock = clock
        self.on_record = on_record
        self.start_seq = start_seq
        self.subjects = daemon.subjects()
        self.states: dict[str, dict[str, Any]] = {}
        self.seqs: dict[str, int] = {}
        self.outside: dict[str, Any] = {}
        self.folded = 0
        self.caught_up = False
        self.dirty: set[str] = set()
        self.barrier: dict[str, int] = {}
        self.repeated = 0
        """Answers the decisions asked for that were already on the log and folded: stored
        by another replica first, or asked for by a decision that does not see its own
        answer (each one logged)."""
        self.running: dict[str, asyncio.Task[None]] = {}
        self.failed: set[str] = set()
        self.idle: dict[str, tuple[int, E]] = {}
        """Effects that warranted nothing, with the sequence folded when they ended: asked
        for again before anything new is folded (or the next tick), they would only
        repeat themselves, so they wait."""
        self.results: deque[tuple[str, Sequence[IntentOf[E]]]] = deque()
        self.records: deque[Event] = deque()
        """Facts to put on the log once each (a fold that skipped an event): published
        conditionally on an empty subject, so a second daemon, or a restart, stores none."""
        self.skipped = 0
        """(record, fold) pairs this kernel skipped because the fold raised."""
        self.acted = Progress()
        self.settled = Progress()
        """Like ``acted``, and also no effect running nor any effect's result waiting."""
        self.reached_end = asyncio.Event()
        """Set once the log has been folded to its end (decisions start then)."""
        self.published = 0
        """Events this kernel appended (a duplicate the log already held counts too)."""
        self.wake = asyncio.Event()
        self._retry_s = 0.0
        self._retry_at: float | None = None
        self._next_tick: float | None = None
        self.sensors: list[asyncio.Task[Any]] = []
        self._changed = asyncio.Event()
        self.ref_fetch = RefFetch(daemon.repo_for, bus.stream_last_seq)
        """Fetches the daemon's mirror before a record naming a commit it lacks is folded."""
        self.share: ProjectShare | None = None
        """Set when this replica shares projects with the daemon's other replicas: it then
        decides only for the projects it holds (``share_ttl_s``: their lease lifetime)."""
        if share_ttl_s is not None and daemon.shares_projects:
            self.share = ProjectShare(
                bus, daemon.name, daemon.actor, share_ttl_s, serves=daemon.projects, clock=clock
            )
            self.share.gained = self._gained

    # -- what tests and peers read ------------------------------------------------------

    @property
    def acted_seq(self) -> int:
        """The sequence through which the log is folded and decided on."""
        return self.acted.seq

    async def wait_acted(self, seq: int) -> None:
        """Return once everything through ``seq`` has been folded and decided on."""
        await self.acted.wait(seq)

    async def wait_settled(self, seq: int) -> None:
        """Return once everything through ``seq`` has been folded and decided on, and every
        effect those decisions started has ended and its intents are carried out (for tests
        and peers that wait on what a shell did, not only on what was decided)."""
        await self.settled.wait(seq)

    def project_states(self, project: str) -> dict[str, Any]:
        """This daemon's folded states of ``project`` (created empty on first use)."""
        states = self.states.get(project)
        if states is None:
            states = self.states[project] = {f.name: f.initial() for f in self.daemon.folds}
        return states

    async def until(self, predicate: Callable[[], bool], timeout: float) -> None:
        """Wait (at most ``timeout`` s) until ``predicate()`` holds after a fold or an
        observation; for tests and peers that wait on what this daemon has seen."""
        async with asyncio.timeout(timeout):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()

    def world(self, project: str) -> World:
        return World(
            project=project,
            states=self.project_states(project),
            seqs=self.seqs,
            now=self.clock(),
            actor=self.daemon.actor,
            outside=self.outside,
            folded=self.folded,
            running=frozenset(self.running),
            failed=frozenset(self.failed),
        )

    # -- what the shell calls -------------------------------------------------------------

    def observe(
        self, name: str, value: Any, *, project: str | None = None, decide: bool = True
    ) -> None:
        """Record what a sensor saw outside the log; unless ``decide`` is false, decide
        again (for one project, or for every project)."""
        self.outside[name] = value
        self._changed.set()
        if decide:
            self.dirty.update([project] if project is not None else self.states)
            self.wake.set()

    def spawn(self, work: Awaitable[Any], name: str) -> None:
        """Run a sensor for as long as the kernel runs; if it fails, the daemon stops."""
        self.sensors.append(asyncio.ensure_future(work))
        self.sensors[-1].set_name(name)

    # -- the loop -----------------------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Follow, fold and act until ``stop`` is set; re-raises what stopped the daemon."""
        stop = stop or asyncio.Event()
        await self.daemon.start(self)
        if self.share is not None:
            self.spawn(self.share.run(self._known_projects), f"{self.daemon.name}-share")
        reader = asyncio.create_task(self.follow(), name=f"{self.daemon.name}-reader")
        actor = asyncio.create_task(self._act(), name=f"{self.daemon.name}-actor")
        stopper = asyncio.create_task(stop.wait(), name=f"{self.daemon.name}-stop")
        watched = {reader, actor, stopper, *self.sensors}
        try:
            done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task is not stopper:
                    task.result()  # a crash is the daemon's crash: the supervisor sees it
                    raise RuntimeError(f"{task.get_name()} ended on its own")
        finally:
            await cancel_all([reader, actor, stopper, *self.sensors, *self.running.values()])
            if self.share is not None:  # hand the projects over now, not after a lapse
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(LEAVE_WAIT_S):
                        await self.share.leave()
            await self.daemon.close()

    def _known_projects(self) -> list[str]:
        return [project for project in self.states if project != "_unknown"]

    def _gained(self, project: str, seq: int) -> None:
        """This replica took ``project`` at ``seq``: decide for it once that taking is
        folded, so every event the previous holder published before it let go (its
        release precedes our taking on the log) is in the state decided on."""
        self.barrier[project] = max(self.barrier.get(project, 0), seq)
        self.dirty.add(project)
        self.wake.set()

    async def follow(self) -> None:
        """Fold the log for ever (the reader half of :meth:`run`; a test may run it alone
        and decide by hand with :meth:`act_on`)."""
        if not await self._has_history():
            self._caught_up()
        folded = 0
        async for record in read(
            self.bus, subjects=self.subjects, start_seq=self.start_seq, follow=True
        ):
            await self.ref_fetch.before_fold(record)  # what the decision reads is here
            self.fold_record(record)
            if record.pending == 0:
                self._caught_up()
            self.wake.set()
            self._changed.set()
            raise_if_cancelled()
            folded += 1
            if folded % YIELD_EVERY == 0:
                # Records already buffered are handed over without a pause; let the other
                # tasks (the actor, effects, a projector's writes and their acks) run.
                await asyncio.sleep(0)

    async def _has_history(self) -> bool:
        async for _record in read(self.bus, subjects=self.subjects, start_seq=self.start_seq):
            return True
        return False

    def _caught_up(self) -> None:
        if not self.caught_up:
            self.caught_up = True
            self.reached_end.set()
            self.wake.set()  # what a sensor observed during the replay is decided now
            log.info("daemon.caught_up", seq=self.folded)

    def fold_record(self, record: Record) -> None:
        """Fold one record (the reader calls this; a test may feed records itself)."""
        self.folded = record.seq
        self.seqs[record.subject] = record.seq
        if self.on_record is not None:
            self.on_record(record.seq)
        event = record.event
        if event is None:
            log.warning(
                "record.undecodable", seq=record.seq, subject=record.subject, error=record.error
            )
            intents = self.daemon.undecodable(record)
            if intents:
                self.results.append((parse_project(record.subject), intents))
            return
        projects = [event.project]
        projects += [p for p in self.daemon.also_folds_into(event) if p != event.project]
        for project in projects:
            try:
                # An override written before folds could fail returns None: nothing failed.
                failures = self.daemon.fold(self.project_states(project), record) or ()
            except Exception as exc:  # the daemon's own fold step failed outside any one fold
                failures = [FoldFailure(self.daemon.name, exc)]
            for failure in failures:
                self._fold_failed(record, failure)
            self.dirty.add(project)

    def _fold_failed(self, record: Record, failure: FoldFailure) -> None:
        """One fold could not take one event: skip it there, say so, record it on the log."""
        assert record.event is not None
        self.skipped += 1
        log.error(
            "fold.skipped_event",
            seq=record.seq,
            subject=record.subject,
            fold=failure.fold,
            error=bounded(f"{type(failure.error).__name__}: {failure.error}"),
        )
        if is_quarantine_subject(record.subject):
            return  # a record about a record would only chain: the log line is enough
        self.records.append(
            fold_quarantine_record(
                record.subject,
                record.seq,
                record.event,
                failure.fold,
                failure.error,
                self.daemon.actor,
            )
        )

    async def _act(self) -> None:
        while True:
            await self._sleep()
            if not (self.caught_up or self.daemon.acts_during_replay):
                continue
            now = asyncio.get_running_loop().time()
            if self._retry_at is not None and now >= self._retry_at:
                self._retry_at = None
            await self._record_once()
            while self.results and self._retry_at is None:
                project, intents = self.results.popleft()
                _published, rest = await self._carry_out_rest(project, intents)
                if rest:  # an effect's result is never dropped: retried after the back-off
                    self.results.appendleft((project, rest))
            if self._next_tick is not None and now >= self._next_tick:
                self.dirty.update(self.states)
                self.idle.clear()
                self._next_tick = None
            if self._retry_at is None:
                await self._decide_dirty()
            if not self.dirty and not self.records:
                await self.acted.mark(self.folded)
                if not self.running and not self.results:
                    await self.settled.mark(self.folded)
            raise_if_cancelled()

    async def _sleep(self) -> None:
        loop = asyncio.get_running_loop()
        if self.daemon.tick_s is not None and self._next_tick is None:
            self._next_tick = loop.time() + self.daemon.tick_s
        deadlines = [t for t in (self._next_tick, self._retry_at) if t is not None]
        timeout = max(min(deadlines) - loop.time(), 0.0) if deadlines else None
        try:
            async with asyncio.timeout(timeout):
                await self.wake.wait()
        except TimeoutError:
            pass
        self.wake.clear()

    async def _decide_dirty(self) -> None:
        for project in sorted(self.dirty):
            if self.folded < self.barrier.get(project, 0):
                continue  # our own last events are not folded yet: decide after them
            if any(waiting == project for waiting, _ in self.results):
                continue  # an effect's answer is not carried out yet: decide after it
            self.dirty.discard(project)
            if self.share is not None and not self.share.holds(project, self.clock()):
                continue  # another replica acts on it; decided here once taken (_gained)
            await self.act_on(project)

    async def act_on(self, project: str, *, now: datetime | None = None) -> list[Event]:
        """Decide for ``project`` on the state folded so far (as of ``now``, the clock by
        default) and carry the intents out; returns the events published."""
        world = self.world(project)
        if now is not None:
            world = dataclasses.replace(world, now=now)
        try:
            intents = self.daemon.decide(world)
        except Exception:
            log.exception("daemon.decide_failed", project=project, seq=self.folded)
            return []  # decided again when the project next changes
        return await self._carry_out(project, intents) if intents else []
