"""The merger daemon: the only writer of trunk.

It folds one project's log (units and merges projections) and, once caught up, takes one
step at a time, each decided from the folded state and the trunk ref alone:

1. answer the oldest approval: queue the head (``MergeQueued``) or refuse the claim with a
   finding (the author approving their own unit, a head that is not the unit's, a unit
   that is not ready);
2. promote open trunk-red findings of a unit whose builder gave up (``contract-wrong``);
3. keep trunk honest: a trunk the merger did not put there (first sight, an outside push)
   is gated; a trunk that moved is gated again (the candidate's checks come from the
   cache, the trunk-only checks run); green after a merge marks the unit DONE, red reverts
   the merge and sends the finding;
4. move the queue: stack candidates (:mod:`loopbus.workers.merger.queue`), and when the head's
   result is in, record it; green moves trunk to exactly that commit, red returns the unit
   with a trunk-red (or contract-wrong) finding, a conflict returns it with the hunks.

Restart-safe: every fact names its ``cause``; ids that must not repeat are derived from
the cause; a ref moved but not yet recorded is recognised by the trailers the merger
writes in its own commits. Unit transitions are published with the unit subject's
expected sequence, so a race is refused by the server rather than overwritten.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path

import structlog
from loopbus.bus import Bus, BusError, Record, TransitionConflict, read
from loopbus.projections import merges as merges_fold
from loopbus.projections import units as units_fold
from loopbus.projections.claims import Refusal, Verdict, merged, returned
from loopbus.projections.merges import Advance, Approval, MergesState, QueueEntry, Tested
from loopbus.projections.units import UnitsState, UnitView
from loopbus.schemas import Actor, Event, project_subjects
from loopbus.schemas.ids import is_token, new_id
from loopbus.schemas.merges import (
    CandidateTested,
    CheckVerdict,
    FailingTest,
    MergeConflicted,
    MergeQueued,
    MergeReverted,
    TrunkAdvanced,
)
from loopbus.workers.gates.config import CONFIG_FILE
from loopbus.workers.gates.runner import GateRunner
from loopbus.workers.gates.signing import load_or_create
from loopbus.workers.merger import evidence, gitops
from loopbus.workers.merger.config import config_text_at
from loopbus.workers.merger.gates import RunnerTrunkGates, TrunkGates, TrunkVerdict
from loopbus.workers.merger.queue import Candidate, Pipeline, merge_message
from loopbus.workers.runtime import DaemonContext
from loopbus.workers.units.live import UnitsLive, answer_id, transition_event, unit_subject

log = structlog.get_logger()

APPROVER_ROLES = frozenset({"reviewer", "operator"})
FOLD_TIMEOUT_S = 30.0
POLL_S = 2.0
RUNNER_NAME = "merger"
"""The gate-runner key the merger signs its trunk gate results with (under the data dir)."""
TEST_ATTEMPTS = 3
"""A candidate test that raises (not a red result: the run itself broke) is retried this
many times before it is recorded as an error, which is red."""


def system_actor(name: str = "merger") -> Actor:
    return Actor(role="system", principal=f"{name}@{socket.gethostname()}:{os.getpid()}")


class MergerDaemon:
    """One project's merge queue and trunk, in one repository."""

    def __init__(
        self,
        bus: Bus,
        repo: Path,
        *,
        project: str,
        gates: TrunkGates,
        trunk: str = "main",
        actor: Actor | None = None,
        window: int = 3,
        poll_s: float = POLL_S,
    ):
        self.bus = bus
        self.repo = Path(repo)
        self.project = project
        self.gates = gates
        self.trunk = trunk
        self.actor = actor or system_actor()
        self.poll_s = poll_s
        self.live = UnitsLive(folds=(units_fold.FOLD, merges_fold.FOLD))
        self.changed = asyncio.Event()
        self.caught_up = asyncio.Event()
        self.seq = 0
        self._folded = asyncio.Condition()
        self.pipeline = Pipeline(repo=self.repo, trunk=trunk, gates=gates, window=window)
        self.pipeline.on_done = self.changed.set
        self.broken: set[str] = set()
        """Approvals whose answer raised (logged once, then left alone)."""
        self.stuck: set[str] = set()
        """Causes whose transition the table refused (logged once, not retried)."""
        self.steps = 0

    # -- state ----------------------------------------------------------------------------

    @property
    def merges(self) -> MergesState:
        state: MergesState = self.live.fold.states(self.project)["merges"]
        return state

    @property
    def units(self) -> UnitsState:
        return self.live.units(self.project)

    # -- the loop -------------------------------------------------------------------------

    async def run(self, ctx: DaemonContext | None = None) -> None:
        """Fold the log and, once caught up, conduct until cancelled (or the reader fails)."""
        reader = asyncio.create_task(self._read(ctx))
        waiter = asyncio.create_task(self.caught_up.wait())
        tasks = [reader, waiter]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            if reader in done:
                reader.result()
                return
            log.info("merger.caught_up", seq=self.seq, project=self.project, trunk=self.trunk)
            conductor = asyncio.create_task(self._conduct())
            tasks.append(conductor)
            done, _ = await asyncio.wait({reader, conductor}, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
        finally:
            for task in tasks:
                task.cancel()
            await self.pipeline.close()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _read(self, ctx: DaemonContext | None) -> None:
        subjects = [project_subjects(self.project)]
        end = await self.bus.stream_last_seq()
        async for record in read(self.bus, subjects=subjects, until_seq=end):
            await self._apply(record, ctx)
        self.caught_up.set()
        async for record in read(self.bus, subjects=subjects, start_seq=end + 1, follow=True):
            await self._apply(record, ctx)

    async def _apply(self, record: Record, ctx: DaemonContext | None) -> None:
        if record.event is not None:
            self.live.apply(record)
        if ctx is not None:
            ctx.last_seq = record.seq
        async with self._folded:
            self.seq = max(self.seq, record.seq)
            self._folded.notify_all()
        self.changed.set()
        await self.live.notify()

    async def folded(self, seq: int) -> None:
        """Wait until the fold has applied the log up to ``seq``."""
        async with asyncio.timeout(FOLD_TIMEOUT_S), self._folded:
            await self._folded.wait_for(lambda: self.seq >= seq)

    async def _conduct(self) -> None:
        while True:
            self.changed.clear()
            try:
                did = await self.step()
            except (BusError, gitops.RepoProblem, TimeoutError) as exc:
                log.warning("merger.step_failed", error=str(exc))
                did = False
            except Exception:  # a bug must not stop trunk's guardian: log, wait, try again
                log.exception("merger.step_crashed")
                did = False
            self.steps += 1
            if not did:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), self.poll_s)

    async def step(self) -> bool:
        """Take the next action the state calls for; ``False`` when there is nothing to do
        until something changes (a record, a test finishing, the trunk ref moving)."""
        state = self.merges
        for approval in state.approvals:
            if approval.id in self.broken:
                continue
            try:
                await self.answer(approval)
            except (BusError, TimeoutError):
                raise  # transient: answered on a later step
            except Exception:  # a claim the merger cannot process must not block the queue
                self.broken.add(approval.id)
                log.exception("merger.approval_unanswerable", approval=approval.id)
            return True
        if await self._promote_given_up():
            return True
        ref = await asyncio.to_thread(gitops.read_ref, self.repo, self.trunk)
        if ref is None:
            log.warning("merger.no_trunk", trunk=self.trunk, repo=str(self.repo))
            return False
        trunk = state.trunk
        if ref != trunk.commit:
            if not await self._recover(ref):
                await self._check_trunk(ref)
            return True
        if trunk.checked is None or trunk.checked.candidate != ref:
            await self._check_trunk(ref)
            return True
        if await self._settle_advance(ref, trunk.checked):
            return True
        if not trunk.checked.green:
            return await self._red_trunk(ref, trunk.checked)
        return await self._move_queue(ref)

    # -- publishing -----------------------------------------------------------------------

    async def publish(self, *events: Event) -> None:
        """Publish ``events`` (atomically when several) and wait until they are folded."""
        if len(events) == 1:
            ack = await self.bus.publish(events[0])
            await self.folded(ack.seq)
        else:
            acks = await self.bus.publish_atomic(list(events))
            await self.folded(acks[-1].seq)

    async def transition(self, unit: str, decide: Callable[[UnitView], Verdict], salt: str) -> bool:
        """Publish the move ``decide`` warrants for ``unit``; ``False`` when refused."""
        view = self.units.units.get(unit)
        if view is None:
            return False
        verdict = decide(view)
        if isinstance(verdict, Refusal):
            key = f"{unit}:{salt}:{view.last_event}"
            if key not in self.stuck:
                self.stuck.add(key)
                log.warning(
                    "merger.transition_refused", unit=unit, code=verdict.code, why=verdict.message
                )
            return False
        seed = verdict.cause or view.last_event or new_id()
        event = transition_event(verdict, self.project, self.actor, answer_id(seed, salt))
        try:
            ack = await self.bus.publish_transition(event, self.live.expected(self.project, unit))
        except TransitionConflict:
            seq = await self.bus.last_subject_seq(unit_subject(self.project, unit))
            await self.folded(seq)
            return True
        await self.folded(ack.seq)
        log.info("merger.unit_transitioned", unit=unit, state=verdict.state, by=verdict.by)
        return True

    # -- approvals ------------------------------------------------------------------------

    async def answer(self, approval: Approval) -> None:
        """Queue the approved head, or refuse the approval with a finding saying why."""
        state, units = self.merges, self.units
        view = units.units.get(approval.unit)
        authors = merges_fold.authors(state, approval.unit)
        head = approval.head or (view.head if view is not None else None) or ""
        refusal = _refuse(approval, view, authors, head, state)
        if refusal is not None:
            code, message = refusal
            await self.publish(
                evidence.refused_approval(
                    id=answer_id(approval.id, "refused"),
                    project=self.project,
                    actor=self.actor,
                    approval=approval.id,
                    unit=approval.unit,
                    slice=view.slice if view is not None and view.slice else None,
                    role=approval.role,
                    approver=approval.approver,
                    code=code,
                    message=message,
                    details={
                        "authors": authors,
                        "head": approval.head,
                        "unit_head": view.head if view is not None else None,
                        "via": approval.via,
                    },
                )
            )
            log.info("merger.approval_refused", unit=approval.unit, code=code)
            return
        await self.publish(
            MergeQueued(
                id=answer_id(approval.id, "queued"),
                project=self.project,
                actor=self.actor,
                unit=approval.unit,
                head=head,
                approval=approval.id,
                approver=approval.approver,
                via="verdict" if approval.via == "verdict" else "report",
                cause=approval.id,
            )
        )
        log.info("merger.queued", unit=approval.unit, head=head, approver=approval.approver)

    # -- promotion when the builder gives up ------------------------------------------------

    async def _promote_given_up(self) -> bool:
        state, units = self.merges, self.units
        for unit, records in list(state.reds.items()):
            view = units.units.get(unit)
            if view is None or view.state != "failed":
                continue
            ended = view.outcome.ended_by if view.outcome is not None else "failed"
            cause = view.last_event or records[-1].finding
            interface = sorted({t for r in records for t in r.interface})
            promotion = evidence.contract_wrong(
                id=answer_id(cause, "promote"),
                project=self.project,
                actor=self.actor,
                unit=unit,
                slice=view.slice or None,
                why="gave-up" if ended == "gave-up" else ended,
                promoted=records,
                interface=interface,
                authors=merges_fold.authors(state, unit),
                cause=cause,
            )
            await self.publish(promotion, *self._closings(records, promotion.id))
            log.info("merger.promoted", unit=unit, why="gave-up", finding=promotion.id)
            return True
        return False

    def _closings(self, records: list[merges_fold.RedRecord], promotion: str) -> list[Event]:
        return [
            evidence.promoted_away(
                id=answer_id(r.finding, "promoted"),
                project=self.project,
                actor=self.actor,
                record=r,
                promotion=promotion,
            )
            for r in records
        ]

    def _red_findings(
        self,
        *,
        unit: str,
        stage: str,
        head: str,
        commit: str,
        tree: str,
        onto: str,
        failing: list[FailingTest],
        checks: Sequence[CheckVerdict],
        cause: str,
        reverted_by: str | None = None,
    ) -> tuple[list[Event], str]:
        """The author's trunk-red finding, or, on a second red on the same interface, the
        contract-wrong promotion (and the closing of what it promotes). Returns the events
        and the id of the finding sent."""
        state = self.merges
        view = self.units.units.get(unit)
        slice_id = view.slice if view is not None and view.slice else None
        sibs = gitops.siblings(self.repo, head, onto, unit)
        interface = evidence.interface_of(failing)
        overlapping = [
            r
            for r in merges_fold.open_reds(state, unit)
            if merges_fold.same_interface(r, interface)
        ]
        authors = merges_fold.authors(state, unit)
        if overlapping:
            promotion = evidence.contract_wrong(
                id=answer_id(cause, "promote"),
                project=self.project,
                actor=self.actor,
                unit=unit,
                slice=slice_id,
                why="red-again",
                promoted=overlapping,
                interface=sorted(set(interface).intersection(*(r.interface for r in overlapping))),
                failing=failing,
                siblings=sibs,
                authors=authors,
                cause=cause,
            )
            log.info("merger.promoted", unit=unit, why="red-again", finding=promotion.id)
            return [promotion, *self._closings(overlapping, promotion.id)], promotion.id
        finding = evidence.trunk_red(
            id=answer_id(cause, "red"),
            project=self.project,
            actor=self.actor,
            unit=unit,
            slice=slice_id,
            stage="candidate" if stage == "candidate" else "trunk",
            head=head,
            commit=commit,
            tree=tree,
            failing=failing,
            checks=checks,
            siblings=sibs,
            authors=authors,
            cause=cause,
            reverted_by=reverted_by,
        )
        return [finding], finding.id

    # -- trunk ----------------------------------------------------------------------------

    async def _check_trunk(self, ref: str) -> None:
        """Run every check on trunk as it is now and record the verdict."""
        state = self.merges
        trunk = state.trunk
        advance = state.last_advance
        ours = trunk.commit == ref and trunk.moved_by is not None
        unit = head = None
        if ours and advance is not None and trunk.moved_by == advance.id:
            unit, head = advance.unit, advance.commit
        verdict = await self.gates.run(self.repo, ref)
        tested = CandidateTested(
            project=self.project,
            actor=self.actor,
            stage="trunk",
            unit=unit,
            head=head,
            candidate=ref,
            tree=verdict.tree or await asyncio.to_thread(gitops.tree_of, self.repo, ref),
            base=None,
            outcome=verdict.outcome,
            checks=verdict.checks,
            failing=verdict.failing,
            error=verdict.error[:2000],
            suite=verdict.suite,
            cause=trunk.moved_by if ours else None,
        )
        await self.publish(tested)
        log.info(
            "merger.trunk_checked",
            trunk=ref,
            outcome=verdict.outcome,
            ran=verdict.executed,
            cached=len(verdict.checks) - verdict.executed,
        )

    async def _settle_advance(self, ref: str, checked: Tested) -> bool:
        """After a merge reached trunk and trunk's gates ran: DONE when green, else revert."""
        state = self.merges
        advance = state.last_advance
        if advance is None or advance.done:
            return False
        if advance.reverted is not None:
            if advance.returned:
                return False
            return await self.transition(
                advance.unit, lambda v: _returned(v, advance.commit, advance.reverted), "returned"
            )
        if state.trunk.moved_by != advance.id:
            return False
        if checked.green:
            summary = f"merged into {self.trunk} as {advance.merge[:12]}; trunk gates green"
            return await self.transition(
                advance.unit,
                lambda v: _merged(v, advance.commit, checked.id, summary),
                "merged",
            )
        await self._revert(ref, advance, checked)
        return True

    async def _revert(self, ref: str, advance: Advance, checked: Tested) -> None:
        message = (
            f"Revert unit {advance.unit}: trunk gates red after it merged\n\n"
            f"Loopbus-Unit: {advance.unit}\n"
            f"Loopbus-Reverts: {advance.merge}\n"
            f"Loopbus-Cause: {checked.id}\n"
        )
        commit, tree = await asyncio.to_thread(
            gitops.revert, self.repo, ref, advance.merge, self.merges.trunk.green_tree, message
        )
        if not await asyncio.to_thread(gitops.move, self.repo, self.trunk, ref, commit):
            log.warning("merger.trunk_moved_under_revert", expected=ref)
            return
        log.info("merger.reverted", unit=advance.unit, merge=advance.merge, revert=commit)
        await self._record_revert(advance, checked, commit, tree)

    async def _record_revert(
        self, advance: Advance, checked: Tested, commit: str, tree: str
    ) -> None:
        failing = list(checked.failing)
        events, finding = await asyncio.to_thread(
            self._red_findings,
            unit=advance.unit,
            stage="trunk",
            head=advance.commit,
            commit=advance.merge,
            tree=advance.tree,
            onto=advance.previous,
            failing=failing,
            checks=checked.checks,
            cause=checked.id,
            reverted_by=commit,
        )
        reverted = MergeReverted(
            id=answer_id(checked.id, "revert"),
            project=self.project,
            actor=self.actor,
            trunk=self.trunk,
            unit=advance.unit,
            merge=advance.merge,
            revert=commit,
            tree=tree,
            failing=failing,
            finding=finding,
            cause=checked.id,
        )
        await self.publish(*events, reverted)

    async def _red_trunk(self, ref: str, checked: Tested) -> bool:
        """Trunk is red and no merge of ours is to blame: go back to the last green trunk,
        or, with none known, tell the operator once and hold the queue."""
        trunk = self.merges.trunk
        failing = list(checked.failing)
        if trunk.green_tree is not None and trunk.green_tree != checked.tree:
            message = (
                f"Restore {self.trunk} to its last green tree: gates red at {ref[:12]}\n\n"
                f"Loopbus-Reverts: {ref}\n"
                f"Loopbus-Cause: {checked.id}\n"
            )
            commit = await asyncio.to_thread(
                gitops.restore, self.repo, ref, trunk.green_tree, message
            )
            if not await asyncio.to_thread(gitops.move, self.repo, self.trunk, ref, commit):
                return True
            await self._record_outside_revert(ref, checked, commit, trunk.green_tree, failing)
            return True
        if trunk.red_notice == ref:
            return False
        finding = evidence.trunk_red_unowned(
            id=answer_id(checked.id, "notice"),
            project=self.project,
            actor=self.actor,
            trunk=self.trunk,
            commit=ref,
            failing=failing,
            reverted_by=None,
            diff="",
        )
        await self.publish(finding)
        log.warning("merger.trunk_red_no_green", trunk=ref)
        return True

    async def _record_outside_revert(
        self, ref: str, checked: Tested, commit: str, tree: str, failing: list[FailingTest]
    ) -> None:
        green = self.merges.trunk.green_commit
        diff = await asyncio.to_thread(gitops.diff_commits, self.repo, green, ref) if green else ""
        finding = evidence.trunk_red_unowned(
            id=answer_id(checked.id, "red"),
            project=self.project,
            actor=self.actor,
            trunk=self.trunk,
            commit=ref,
            failing=failing,
            reverted_by=commit,
            diff=diff[: gitops.DIFF_CAP],
        )
        reverted = MergeReverted(
            id=answer_id(checked.id, "revert"),
            project=self.project,
            actor=self.actor,
            trunk=self.trunk,
            unit=None,
            merge=ref,
            revert=commit,
            tree=tree,
            failing=failing,
            finding=finding.id,
            cause=checked.id,
        )
        await self.publish(finding, reverted)
        log.warning("merger.outside_push_reverted", pushed=ref, revert=commit)

    async def _recover(self, ref: str) -> bool:
        """Trunk is at a commit the log does not have: if it is one the merger wrote and
        moved to before it could record it, record it now. ``False``: not ours."""
        state = self.merges
        if not await asyncio.to_thread(gitops.has_commit, self.repo, ref):
            return False
        marks = await asyncio.to_thread(gitops.trailers, self.repo, ref)
        queued = marks.get("Loopbus-Queued")
        for entry in state.queue:
            tested = entry.tested
            if (
                entry.queued == queued
                and tested is not None
                and tested.green
                and tested.candidate == ref
            ):
                await self._record_advance(entry, tested)
                return True
        cause = marks.get("Loopbus-Cause")
        checked = state.trunk.checked
        if cause is None or checked is None or checked.id != cause:
            return False
        tree = await asyncio.to_thread(gitops.tree_of, self.repo, ref)
        advance = state.last_advance
        if advance is not None and marks.get("Loopbus-Reverts") == advance.merge:
            await self._record_revert(advance, checked, ref, tree)
            return True
        if marks.get("Loopbus-Reverts") == state.trunk.commit:
            failing = list(checked.failing)
            await self._record_outside_revert(marks["Loopbus-Reverts"], checked, ref, tree, failing)
            return True
        return False

    # -- the queue ------------------------------------------------------------------------

    async def _move_queue(self, trunk: str) -> bool:
        entries = [e for e in self.merges.queue if _stands(e, self.units)]
        if not entries:
            self.pipeline.cancel_all()
            return False
        head = entries[0]
        if head.conflicted is not None:
            return await self.transition(
                head.unit, lambda v: _returned(v, head.head, head.conflicted), "returned"
            )
        tested = head.tested
        if tested is not None and tested.base == trunk:
            if tested.green:
                return await self._land(head, tested, trunk)
            return await self.transition(
                head.unit, lambda v: _returned(v, head.head, tested.id), "returned"
            )
        stacked = await self.pipeline.stack(entries, trunk)
        first = stacked[0]
        if not first.attempt.clean:
            await self._conflict(first, trunk)
            return True
        assert first.task is not None
        if not first.task.done():
            return False
        return await self._record_result(first, trunk)

    async def _record_result(self, candidate: Candidate, trunk: str) -> bool:
        task = candidate.task
        assert task is not None
        if task.cancelled():
            self.pipeline.forget(candidate)
            return True
        problem = task.exception()
        if problem is not None:
            candidate.failures += 1
            log.warning(
                "merger.candidate_test_failed",
                unit=candidate.entry.unit,
                attempt=candidate.failures,
                error=repr(problem),
            )
            if candidate.failures < TEST_ATTEMPTS:
                candidate.task = None  # the next stack() starts it again
                self.pipeline.candidates[candidate.key] = candidate
                return True
            verdict = TrunkVerdict(
                commit=candidate.commit,
                tree=candidate.attempt.tree or "",
                outcome="error",
                failing=[FailingTest(test="gates", check="gates", message=repr(problem)[:500])],
                error=f"the trunk gates could not run: {problem!r}"[:2000],
            )
        else:
            verdict = task.result()
        entry = candidate.entry
        tested = CandidateTested(
            project=self.project,
            actor=self.actor,
            stage="candidate",
            unit=entry.unit,
            head=entry.head,
            candidate=candidate.commit,
            tree=candidate.attempt.tree or verdict.tree,
            base=trunk,
            ahead=candidate.ahead,
            outcome=verdict.outcome,
            checks=verdict.checks,
            failing=verdict.failing,
            error=verdict.error[:2000],
            suite=verdict.suite,
            cause=entry.queued,
        )
        log.info(
            "merger.candidate_tested",
            unit=entry.unit,
            outcome=verdict.outcome,
            candidate=candidate.commit,
            ahead=candidate.ahead,
        )
        if verdict.green:
            await self.publish(tested)
            return True
        events, _finding = await asyncio.to_thread(
            self._red_findings,
            unit=entry.unit,
            stage="candidate",
            head=entry.head,
            commit=candidate.commit,
            tree=tested.tree,
            onto=trunk,
            failing=list(verdict.failing),
            checks=list(verdict.checks),
            cause=tested.id,
        )
        await self.publish(tested, *events)
        return True

    async def _land(self, entry: QueueEntry, tested: Tested, trunk: str) -> bool:
        """Move trunk to the candidate tested green on it, then record that it did."""
        if not await asyncio.to_thread(gitops.has_commit, self.repo, tested.candidate):
            # The tested commit is gone (the repository was replaced): merge again; the same
            # tree is the tree that was tested, so it may land.
            attempt = await asyncio.to_thread(
                gitops.merge, self.repo, trunk, entry.head, merge_message(entry, self.trunk)
            )
            if attempt.commit is None or attempt.tree != tested.tree:
                log.warning("merger.tested_commit_missing", candidate=tested.candidate)
                return False
            tested = Tested(
                id=tested.id,
                candidate=attempt.commit,
                tree=tested.tree,
                base=trunk,
                outcome=tested.outcome,
            )
        if not await asyncio.to_thread(gitops.move, self.repo, self.trunk, trunk, tested.candidate):
            log.warning("merger.trunk_moved_under_advance", expected=trunk)
            return True
        await self._record_advance(entry, tested)
        return True

    async def _record_advance(self, entry: QueueEntry, tested: Tested) -> None:
        assert tested.base is not None
        advanced = TrunkAdvanced(
            id=answer_id(tested.id, "advance"),
            project=self.project,
            actor=self.actor,
            trunk=self.trunk,
            unit=entry.unit,
            commit=entry.head,
            merge=tested.candidate,
            tree=tested.tree,
            previous=tested.base,
            cause=tested.id,
        )
        await self.publish(advanced)
        log.info("merger.trunk_advanced", unit=entry.unit, merge=tested.candidate)

    async def _conflict(self, candidate: Candidate, trunk: str) -> None:
        entry = candidate.entry
        view = self.units.units.get(entry.unit)
        conflicted_id = answer_id(entry.queued, "conflict")
        finding = evidence.merge_conflict(
            id=answer_id(entry.queued, "conflict-finding"),
            project=self.project,
            actor=self.actor,
            unit=entry.unit,
            slice=view.slice if view is not None and view.slice else None,
            head=entry.head,
            base=trunk,
            files=candidate.attempt.conflicts,
            authors=merges_fold.authors(self.merges, entry.unit),
            cause=entry.queued,
        )
        conflicted = MergeConflicted(
            id=conflicted_id,
            project=self.project,
            actor=self.actor,
            unit=entry.unit,
            head=entry.head,
            base=trunk,
            paths=[f.path for f in candidate.attempt.conflicts],
            finding=finding.id,
            cause=entry.queued,
        )
        self.pipeline.forget(candidate)
        await self.publish(finding, conflicted)
        log.info("merger.conflicted", unit=entry.unit, paths=conflicted.paths)


# -- decisions (pure) ----------------------------------------------------------------------


def _refuse(
    approval: Approval,
    view: UnitView | None,
    authors: list[str],
    head: str,
    state: MergesState,
) -> tuple[str, str] | None:
    """(code, message) when an approval cannot be acted on, else ``None``."""
    if approval.role not in APPROVER_ROLES:
        return (
            "approver-role",
            f"an approval must come from a reviewer or an operator, not role {approval.role!r}",
        )
    if view is None or not view.slice:
        return "unit-not-planned", f"unit {approval.unit} was never planned"
    if approval.approver in authors:
        return (
            "self-approval",
            f"{approval.approver} authored unit {approval.unit} and cannot approve it; "
            "an approval must come from a principal other than the unit's author",
        )
    if view.state != "working" or not view.ready:
        state_text = view.state or "planned"
        return (
            "not-ready",
            f"unit {approval.unit} is {state_text}"
            + (", not ready" if view.state == "working" else "")
            + "; only a ready unit can be approved for merge",
        )
    if head != view.head:
        return (
            "head-mismatch",
            f"the approval names {head or 'no commit'}, but unit {approval.unit}'s head is "
            f"{view.head}; approve the head that was reviewed",
        )
    entry = merges_fold.entry_of(state, approval.unit)
    if entry is not None and entry.head == head:
        return "already-queued", f"{head[:12]} of unit {approval.unit} is already queued"
    return None


def _stands(entry: QueueEntry, units: UnitsState) -> bool:
    view = units.units.get(entry.unit)
    return view is not None and view.state == "working" and view.ready and view.head == entry.head


def _merged(view: UnitView, head: str, cause: str, summary: str) -> Verdict:
    if view.head != head:
        return Refusal(view.unit, "head-moved", f"unit {view.unit} moved on from {head[:12]}")
    return merged(view, cause, summary)


def _returned(view: UnitView, head: str, cause: str | None) -> Verdict:
    if view.head != head or not view.ready:
        return Refusal(view.unit, "head-moved", f"unit {view.unit} already moved on")
    return returned(view, cause)


async def run(
    ctx: DaemonContext,
    *,
    repo: Path | None,
    trunk: str = "main",
    project: str | None = None,
    data_dir: Path = Path(".loopbus"),
    window: int = 3,
) -> None:
    """The daemon body: idle (but healthy) without a repository; otherwise wait until the
    repository has a trunk that names its project, then merge for ever."""
    if repo is None:
        log.info("merger.idle", why="no repository configured (--repo)")
        await ctx.stop.wait()
        return
    while project is None:
        project = await asyncio.to_thread(project_of, repo, trunk)
        if project is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ctx.stop.wait(), POLL_S)
            if ctx.stop.is_set():
                return
    signer = await asyncio.to_thread(load_or_create, data_dir, RUNNER_NAME)
    actor = system_actor(ctx.name)
    runner = GateRunner(ctx.bus, repo, signer, principal=actor.principal, project=project)
    daemon = MergerDaemon(
        ctx.bus,
        repo,
        project=project,
        gates=RunnerTrunkGates(runner),
        trunk=trunk,
        actor=actor,
        window=window,
    )
    await daemon.run(ctx)


def project_of(repo: Path, trunk: str) -> str | None:
    """The project id trunk's ``loopbus.toml`` declares (``None``, logged, when it cannot be
    read yet: no repository, no trunk, no file, no id)."""
    try:
        ref = gitops.read_ref(repo, trunk)
        text = config_text_at(repo, ref) if ref is not None else None
    except gitops.RepoProblem as exc:
        log.warning("merger.waiting", why=str(exc))
        return None
    if text is None:
        log.warning("merger.waiting", why=f"{trunk} has no {CONFIG_FILE} naming the project")
        return None
    try:
        project = tomllib.loads(text).get("project", {}).get("id")
    except (tomllib.TOMLDecodeError, AttributeError):
        project = None
    if not isinstance(project, str) or not is_token(project):
        log.warning("merger.waiting", why=f"{CONFIG_FILE} on {trunk} names no valid project id")
        return None
    return project
