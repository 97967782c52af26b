"""The speculative part of the merge queue: candidates stacked on the ones ahead of them.

Queued heads are merged in order into trunk, each on top of the candidate ahead of it
(``trunk + U1``, ``trunk + U1 + U2`` …, up to ``window`` deep), and all of them are tested
at once. Only the head of the queue can decide anything: when its result is in and green,
trunk moves to it and the next candidate, which already sits on exactly that commit, is
next. When the head is red, every candidate stacked on it sits on a commit trunk will never
hold, so they are dropped and rebuilt on trunk without it — the re-test.

A candidate is keyed by what it is made of (``base``, unit, head), so a stack that stays
valid is never rebuilt or re-tested, and one that stops being valid is simply never asked
for again (and its test is cancelled). Nothing here publishes or decides: the merger's
decision asks for a stack (an effect of its shell), and the pipeline reports what it holds
(:meth:`Pipeline.view`) whenever that changes — a stack built, a test finished.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from projections.merges import QueueEntry
from schemas.adoption import config_digest
from schemas.merges import FailingTest
from workers.errors import WorkerError
from workers.merger import gitops
from workers.merger.config import candidate_gating
from workers.merger.gates import TrunkGates, TrunkVerdict, config_refused
from workers.merger.seen import (
    CandidateView,
    Key,
    PipelineView,
    Request,
    merge_message,
    request_of,
)
from workers.repository import resolve
from workers.runtime import cancel_all

log = structlog.get_logger()

TEST_ATTEMPTS = 3
"""A candidate test that raises (not a red result: the run itself broke) is tried this many
times before it is recorded as an error, which is red."""


@dataclass
class Candidate:
    """One queued head merged onto ``base``, and its test once started."""

    key: Key
    entry: QueueEntry
    attempt: gitops.MergeAttempt
    ahead: list[str]
    criteria: tuple[str, ...] = ()
    """The unit's criteria (from the plan): the only ``pending`` entries it may clear."""
    judge: str | None = None
    """The ``loopbus.toml`` text that judges it: the adopted one on trunk, else the file of
    the candidate ahead (the configuration trunk will have adopted once that one lands)."""
    task: asyncio.Task[TrunkVerdict] | None = None

    @property
    def commit(self) -> str:
        assert self.attempt.commit is not None
        return self.attempt.commit

    def view(self) -> CandidateView:
        task = self.task
        done = task is not None and task.done() and not task.cancelled()
        verdict = task.result() if done and task is not None else None
        return CandidateView(self.key, self.attempt, tuple(self.ahead), verdict)


@dataclass
class Pipeline:
    """The candidates under test, for one repository and trunk."""

    repo: Path
    trunk: str
    gates: TrunkGates
    on_change: Callable[[], None] = lambda: None
    candidates: dict[Key, Candidate] = field(default_factory=dict)
    request: Request | None = None
    stacked: list[Candidate] = field(default_factory=list)
    stopping: set[asyncio.Task[None]] = field(default_factory=set)
    """Dropped candidates' tests being cancelled until they end (see :meth:`_drop`)."""

    def view(self) -> PipelineView:
        return PipelineView(self.request, tuple(c.view() for c in self.stacked))

    async def stack(
        self,
        entries: Sequence[QueueEntry],
        trunk_commit: str,
        criteria: Mapping[str, Sequence[str]] | None = None,
        judge: str | None = None,
    ) -> PipelineView:
        """Build (or reuse) the candidates for ``entries`` on trunk, start their tests, and
        drop every candidate no longer wanted. The stack stops after the first candidate
        that does not merge (nothing can be stacked on it). ``criteria``: each unit's
        criteria from the plan; ``judge``: the adopted configuration's text."""
        criteria = criteria or {}
        stacked: list[Candidate] = []
        base = trunk_commit
        ahead: list[str] = []
        for entry in entries:
            key = (base, entry.unit, entry.head)
            own = judge
            if base != trunk_commit:  # the configuration once the one ahead has landed
                own = (await asyncio.to_thread(resolve, self.repo, base)).config_text or judge
            candidate = self.candidates.get(key)
            if candidate is not None and candidate.judge != own:
                self._drop(key)  # judged under another adoption: its verdict must not land
                candidate = None
            if candidate is None:
                attempt = await asyncio.to_thread(
                    gitops.merge, self.repo, base, entry.head, merge_message(entry, self.trunk)
                )
                candidate = Candidate(
                    key=key,
                    entry=entry,
                    attempt=attempt,
                    ahead=list(ahead),
                    criteria=tuple(criteria.get(entry.unit, ())),
                    judge=own,
                )
                self.candidates[key] = candidate
            stacked.append(candidate)
            if not candidate.attempt.clean:
                break
            if candidate.task is None:
                candidate.task = asyncio.create_task(self._evaluate(candidate))
                candidate.task.add_done_callback(self._done)
                log.info(
                    "merger.candidate_testing",
                    unit=entry.unit,
                    candidate=candidate.commit,
                    ahead=candidate.ahead,
                )
            ahead.append(entry.unit)
            base = candidate.commit
        self.keep({c.key for c in stacked})
        digest = config_digest(judge) if judge is not None else ""
        self.request, self.stacked = request_of(trunk_commit, entries, digest), stacked
        return self.view()

    def keep(self, wanted: set[Key]) -> None:
        """Forget (and stop testing) every candidate not in ``wanted``."""
        for key in [k for k in self.candidates if k not in wanted]:
            self._drop(key)
        self.stacked = [c for c in self.stacked if c.key in wanted]

    def cancel_all(self) -> None:
        self.keep(set())

    async def close(self) -> None:
        """Stop every test and wait until each has unwound (its processes killed)."""
        tasks = [c.task for c in self.candidates.values() if c.task is not None]
        self.cancel_all()
        await stop_all(tasks)  # cancelled again until each ends: one cancel can be lost
        await asyncio.gather(*self.stopping)

    def _drop(self, key: Key) -> None:
        """Forget a candidate and stop its test. One cancel can be lost inside a publish
        (``bus.cancel``), and the dropped test would then run to its end for nothing, its
        checks holding gate slots: it is cancelled again until it ends, in the background."""
        candidate = self.candidates.pop(key)
        task = candidate.task
        if task is not None and not task.done():
            task.cancel()
            stopper = asyncio.create_task(stop_all([task]), name=f"stop {task.get_name()}")
            self.stopping.add(stopper)
            stopper.add_done_callback(self.stopping.discard)

    def _done(self, task: asyncio.Task[TrunkVerdict]) -> None:
        if not task.cancelled():
            self.on_change()

    async def _evaluate(self, candidate: Candidate) -> TrunkVerdict:
        """The candidate's verdict, marked with the configuration that judged it (even an
        error counts only under that one); a run that breaks is tried again, then is an
        error."""
        verdict = await self._verdict(candidate)
        if candidate.judge is None:
            return verdict
        return dataclasses.replace(verdict, config=config_digest(candidate.judge))

    async def _verdict(self, candidate: Candidate) -> TrunkVerdict:
        problem: Exception | None = None
        for attempt in range(1, TEST_ATTEMPTS + 1):
            try:
                return await self._test(candidate)
            except Exception as exc:  # the run broke (not a red result): try it again
                problem = exc
                log.warning(
                    "merger.candidate_test_failed",
                    unit=candidate.entry.unit,
                    attempt=attempt,
                    error=repr(exc),
                )
        return TrunkVerdict(
            commit=candidate.commit,
            tree=candidate.attempt.tree or "",
            outcome="error",
            failing=[FailingTest(test="gates", check="gates", message=repr(problem)[:500])],
            error=f"the trunk gates could not run: {problem!r}"[:2000],
        )

    async def _test(self, candidate: Candidate) -> TrunkVerdict:
        """The candidate stage, on the merge result: every check but the trunk-only ones,
        all as the commit it sits on (trunk, or the candidate ahead that must land first)
        configures them, never as the candidate's own ``loopbus.toml`` would. The unit may
        only clear its own criteria from ``pending`` and add checks; any other edit to the
        file would become trunk's configuration if it landed, so it makes the candidate red."""
        commit, base = candidate.commit, candidate.key[0]
        try:
            gating = await asyncio.to_thread(
                candidate_gating, self.repo, base, commit, candidate.criteria, candidate.judge
            )
        except WorkerError as exc:
            return config_error(commit, candidate.attempt.tree or "", str(exc))
        verdict = await self.gates.run(
            self.repo,
            commit,
            checks=gating.checks,
            trunk=base,
            criteria=candidate.criteria,
            judge=candidate.judge,
        )
        return config_refused(verdict, gating.refused) if gating.refused else verdict


def config_error(commit: str, tree: str, message: str) -> TrunkVerdict:
    """An error verdict for a commit whose gate configuration cannot be read: red."""
    return TrunkVerdict(
        commit=commit,
        tree=tree,
        outcome="error",
        failing=[FailingTest(test="config", check="config", message=message[:500])],
        error=message,
    )


async def stop_all(tasks: list[asyncio.Task[TrunkVerdict]]) -> None:
    """Wait for cancelled tests to finish unwinding, cancelling again any that a lost
    cancel left running (``workers.runtime.cancel_all``); a test's error is logged there."""
    await cancel_all(tasks)
