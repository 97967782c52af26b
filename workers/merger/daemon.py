"""The merger daemon: the only writer of trunk, as a decision over the log plus a shell.

It folds one project's units, merges and builds (whose auto picks hold a unit back) and
decides with :func:`decide.decide` (pure: see that module for the order of its steps).
This module is the shell: what the decision cannot do without the repository.

* a sensor reads the trunk ref every ``poll_s`` and reports it (``seen.TRUNK``) — an
  outside push is seen this way; the shell's own ref moves report it at once;
* the candidate pipeline (:mod:`.queue`) merges and tests queued heads and reports what it
  holds (``seen.PIPELINE``);
* the effects: gate trunk, stack candidates, land a candidate (move trunk to it), revert a
  merge, restore the last green tree, record a red or a revert with the sibling diff, and
  adopt a configuration (trunk's on a first start, the commit an operator's claim names;
  a landed unit's allowed edit with its advance, undone with its revert:
  :mod:`.adoption`).

Restart-safe: every fact names its ``cause`` and ids that must not repeat are derived from
it; a ref moved but not yet recorded is recognised by the trailers the merger writes in
its own commits; unit transitions are conditional on the unit subject's sequence.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any, assert_never

import structlog

from bus import Record
from projections import FoldFailure, contract_landing
from projections import builds as builds_fold
from projections import merges as merges_fold
from projections import units as units_fold
from projections.intents import Publish, PublishBatch
from projections.merge_trunk import Advance, Tested
from projections.merges import Adoption, QueueEntry
from schemas import Actor, Event
from schemas.merges import (
    CandidateTested,
)
from workers import history, repository
from workers.errors import ConfigError, RepoError, WorkerError
from workers.kernel import Daemon, Kernel, World
from workers.merger import adoption, effects, facts, gitops, landing_commit
from workers.merger.decide import Policy, decide
from workers.merger.effects import MergerEffect, MergerIntent
from workers.merger.facts import RedCase
from workers.merger.gates import TrunkGates
from workers.merger.queue import Pipeline
from workers.merger.seen import PIPELINE, TRUNK, TrunkSeen, look_at, merge_message
from workers.merger.story import note

log = structlog.get_logger()

POLL_S = 2.0


NAME = "merger"
"""The name the merger runs under: its kernel's, its health beacon's and its gate-runner
key's (it signs its trunk gate results with it)."""


class Merger(Daemon[MergerEffect]):
    """One project's merge queue and trunk, in one repository."""

    name = NAME
    folds = (units_fold.FOLD, merges_fold.FOLD, builds_fold.FOLD, contract_landing.FOLD)

    def __init__(
        self,
        repo: Path,
        *,
        project: str,
        gates: TrunkGates,
        trunk: str = "main",
        actor: Actor | None = None,
        window: int = 3,
        poll_s: float = POLL_S,
    ) -> None:
        super().__init__(projects=[project], actor=actor)
        self.repo = Path(repo)
        self.project = project
        self.gates = gates
        self.policy = Policy(trunk=trunk, window=window)
        self.poll_s = poll_s
        self.tick_s = poll_s  # an effect that could not be done now is tried again
        self.pipeline = Pipeline(repo=self.repo, trunk=trunk, gates=gates)
        self.kernel: Kernel[MergerEffect] | None = None
        self.seen: TrunkSeen | None = None
        self.ref_lock = asyncio.Lock()
        """Held while the trunk ref is read and reported, or moved and reported, so that a
        stale read can never be reported after the shell's own move."""

    # -- the kernel's side ------------------------------------------------------------------

    def repo_for(self, project: str) -> Path | None:
        return self.repo if project == self.project else None

    async def start(self, kernel: Kernel[MergerEffect]) -> None:
        self.kernel = kernel
        self.pipeline.on_change = self._report_pipeline
        kernel.spawn(self._watch(kernel), "merger-trunk")

    def decide(self, world: World) -> Sequence[MergerIntent]:
        return decide(world, self.policy)

    def fold(self, states: dict[str, Any], record: Record) -> Sequence[FoldFailure]:
        failures = super().fold(states, record)
        if record.event is not None and record.event.actor == self.actor:
            note(record.event)
        return failures

    async def perform(self, effect: MergerEffect) -> Sequence[MergerIntent]:
        try:
            return await self._perform(effect)
        except WorkerError as exc:  # the repository or the gates cannot do it now
            log.warning("merger.effect_failed", action=effect.action, error=str(exc))
            return ()  # asked for again on the next tick (or when the log moves)

    async def _perform(self, effect: MergerEffect) -> Sequence[MergerIntent]:
        project, actor, repo = self.project, self.actor, self.repo
        match effect:
            case effects.CheckTrunk():
                return await self._check_trunk(effect)
            case effects.Stack():
                return await self._stack(effect)
            case effects.Land(entry=entry, tested=tested, trunk=trunk, adopted=adopted):
                return await self._land(entry, tested, trunk, adopted)
            case effects.Revert():
                return await self._revert(effect)
            case effects.Restore(ref=ref, checked=checked, green_tree=green_tree, green=green):
                return await self._restore(ref, checked, green_tree, green)
            case effects.RecordRed(tested=tested, case=case):
                return await self._record_red(tested, case)
            case effects.RecordRevert(case=case, advance=advance, tree=tree, restore=restore):
                return await self._record_revert(case, advance, tree, restore)
            case effects.RecordOutsideRevert():
                return await self._record_outside_revert(effect)
            case effects.RecordAdvance(entry=entry, tested=tested, adopted=adopted):
                return await self._record_advance(entry, tested, adopted)
            case effects.AdoptFirst(ref=ref):
                return await adoption.adopt_first(repo, project, actor, ref)
            case effects.Adopt(claim=claim):
                return await adoption.adopt(repo, project, actor, claim)
            case effects.LandContract(pending=pending, trunk=trunk, adopted=adopted):
                return await landing_commit.land_contract(
                    project, actor, repo, self._move, pending, trunk, adopted
                )
            case effects.LandProposal(
                approval=approval, proposal=proposal, trunk=trunk, adopted=adopted
            ):
                return await landing_commit.land_proposal(
                    project, actor, repo, self._move, approval, proposal, trunk, adopted
                )
            case effects.RecordContract(pending=pending, commit=commit, previous=previous):
                return await landing_commit.record_contract(
                    project, actor, repo, pending, commit, previous
                )
            case effects.RecordProposal(approval=approval, commit=commit, previous=previous):
                return await landing_commit.record_proposal(
                    project, actor, repo, approval, commit, previous
                )
            case _:
                assert_never(effect)

    async def close(self) -> None:
        await self.pipeline.close()

    # -- sensors ---------------------------------------------------------------------------

    async def _watch(self, kernel: Kernel[MergerEffect]) -> None:
        """Report the trunk ref once the log is folded, then whenever it changes."""
        await kernel.reached_end.wait()
        first = True
        while True:
            async with self.ref_lock:
                await self._look(force=first)
            first = False
            await asyncio.sleep(self.poll_s)

    async def _look(self, *, force: bool = False) -> None:
        """Read the trunk ref (with the lock held) and report it when it changed."""
        try:
            seen = await asyncio.to_thread(look_at, self.repo, self.trunk, self.seen)
        except RepoError as exc:
            log.warning("merger.trunk_unreadable", error=str(exc))
            return
        if seen == self.seen and not force:
            return
        if seen is None:
            log.warning("merger.no_trunk", trunk=self.trunk, repo=str(self.repo))
        self.seen = seen
        assert self.kernel is not None
        self.kernel.observe(TRUNK, seen, project=self.project)

    def _report_pipeline(self) -> None:
        if self.kernel is not None:
            self.kernel.observe(PIPELINE, self.pipeline.view(), project=self.project)

    async def _move(self, old: str, new: str) -> bool:
        """Move trunk from ``old`` to ``new`` (compare-and-swap, on the remote when the repo
        is its mirror: a lost race is seen, re-stacked and re-tested on the winner's trunk)
        and report where it is."""
        async with self.ref_lock:
            moved = await asyncio.to_thread(gitops.move, self.repo, self.trunk, old, new)
            await self._look()
        return moved

    # -- effects ---------------------------------------------------------------------------

    async def _check_trunk(self, effect: effects.CheckTrunk) -> Sequence[MergerIntent]:
        """Run every check on trunk as it is now (``force``: past the cache) with the
        adopted configuration ``judge``, and record the results, then the verdict. A trunk
        the merger did not move (``reference``: the last green trunk, else the adopted
        commit) must also run the reference's tests, and is red when it changes the gate
        configuration."""
        ref, judge, reference = effect.ref, effect.judge, effect.reference
        unit, head, cause, force = effect.unit, effect.head, effect.cause, effect.force
        outside = reference is not None
        verdict = await self.gates.run(
            self.repo,
            ref,
            trunk=reference if outside and reference != ref else None,
            force=force,
            judge=judge.text,
        )
        if outside:
            touched = await asyncio.to_thread(adoption.tampering, self.repo, reference, ref, judge)
            if touched:
                verdict = adoption.tampered(verdict, touched)
        tree = verdict.tree or await asyncio.to_thread(repository.tree_of, self.repo, ref)
        tested = facts.trunk_tested(
            self.project, self.actor, verdict, ref=ref, tree=tree, unit=unit, head=head, cause=cause
        )
        # The results first: the kernel stops at the first publish that fails, so a trunk
        # verdict never reaches the log ahead of the results it names.
        return [*verdict.records, Publish(tested)]

    async def _stack(self, effect: effects.Stack) -> Sequence[MergerIntent]:
        """Stack the entries on the trunk commit, judged with the adopted configuration;
        the pipeline reports what it holds."""
        try:
            await self.pipeline.stack(effect.entries, effect.trunk, effect.criteria, effect.judge)
        finally:
            self._report_pipeline()
        return ()

    async def _land(
        self, entry: QueueEntry, tested: Tested, trunk: str, adopted: Adoption
    ) -> Sequence[MergerIntent]:
        """Move trunk to the candidate tested green on it; the advance is recorded next."""
        if not await asyncio.to_thread(history.has_commit, self.repo, tested.candidate):
            # The tested commit is gone (the repository was replaced): merge again; the same
            # tree is the tree that was tested, so it may land.
            message = merge_message(entry, self.trunk)
            attempt = await asyncio.to_thread(gitops.merge, self.repo, trunk, entry.head, message)
            if attempt.commit is None or attempt.tree != tested.tree:
                log.warning("merger.tested_commit_missing", candidate=tested.candidate)
                return ()
            tested = Tested(
                id=tested.id,
                candidate=attempt.commit,
                tree=tested.tree,
                base=trunk,
                outcome=tested.outcome,
            )
        if not await self._move(trunk, tested.candidate):
            log.warning("merger.trunk_moved_under_advance", expected=trunk)
            return ()
        return await self._record_advance(entry, tested, adopted)

    async def _record_advance(
        self, entry: QueueEntry, tested: Tested, adopted: Adoption
    ) -> Sequence[MergerIntent]:
        """The advance, with the adoption of the unit's allowed edit to ``loopbus.toml``
        when it made one (one atomic batch: trunk never holds a file nobody adopted)."""
        advance = facts.advanced(self.project, self.actor, self.trunk, entry, tested)
        try:
            found = await asyncio.to_thread(
                adoption.read_adoptable, self.repo, tested.candidate, self.project
            )
        except ConfigError as exc:  # green under the adopted file, yet its own is unusable
            log.warning("merger.merged_config_not_adopted", unit=entry.unit, error=str(exc))
            return [Publish(advance)]
        if found.text == adopted.text:
            return [Publish(advance)]
        adopted_now = adoption.merge_adoption(
            found, self.project, self.actor, unit=entry.unit, advance=advance.id
        )
        log.info("merger.config_adopted", why="merge", unit=entry.unit, digest=adopted_now.digest)
        return [PublishBatch((advance, adopted_now))]

    async def _revert(self, effect: effects.Revert) -> Sequence[MergerIntent]:
        """Undo a merge that turned trunk red, move trunk there, record it with the finding."""
        ref, advance, case = effect.ref, effect.advance, effect.case
        green_tree, restore = effect.green_tree, effect.restore
        siblings = await self._siblings(case)
        message = facts.revert_message(advance, case.cause)
        commit, tree = await asyncio.to_thread(
            gitops.revert, self.repo, ref, advance.merge, green_tree, message
        )
        if not await self._move(ref, commit):
            log.warning("merger.trunk_moved_under_revert", expected=ref)
            return ()
        log.info("merger.reverted", unit=advance.unit, merge=advance.merge, revert=commit)
        events = facts.unit_reverted(case.reverted(commit), siblings, advance, self.trunk, tree)
        return [PublishBatch((*events, *self._unadopt(advance, restore)))]

    async def _restore(
        self, ref: str, checked: Tested, green_tree: str, green: str | None
    ) -> Sequence[MergerIntent]:
        """Trunk was pushed red: a commit on top back to the last green tree, recorded."""
        diff = await self._diff(green, ref)
        message = facts.restore_message(self.trunk, ref, checked)
        commit = await asyncio.to_thread(gitops.restore, self.repo, ref, green_tree, message)
        if not await self._move(ref, commit):
            return ()
        log.warning("merger.outside_push_reverted", pushed=ref, revert=commit)
        return await self._outside(ref, checked, commit, green_tree, diff)

    async def _record_red(self, tested: CandidateTested, case: RedCase) -> Sequence[MergerIntent]:
        """The head's candidate is red: its result, with the finding about its siblings."""
        events, _finding = facts.red_findings(case, await self._siblings(case))
        return [PublishBatch((tested, *events))]

    async def _record_revert(
        self, case: RedCase, advance: Advance, tree: str, restore: Adoption | None = None
    ) -> Sequence[MergerIntent]:
        """A revert the merger made but did not record before it stopped."""
        siblings = await self._siblings(case)
        events = facts.unit_reverted(case, siblings, advance, self.trunk, tree)
        return [PublishBatch((*events, *self._unadopt(advance, restore)))]

    def _unadopt(self, advance: Advance, restore: Adoption | None) -> list[Event]:
        """The configuration before ``advance``, adopted again with its revert (nothing
        when its merge adopted no edit)."""
        if restore is None:
            return []
        log.info("merger.config_adopted", why="revert", unit=advance.unit, digest=restore.digest)
        fact = adoption.revert_adoption(
            restore, self.project, self.actor, unit=advance.unit, advance=advance.id
        )
        return [fact]

    async def _record_outside_revert(
        self, effect: effects.RecordOutsideRevert
    ) -> Sequence[MergerIntent]:
        """A restore the merger made but did not record before it stopped."""
        diff = await self._diff(effect.green, effect.pushed)
        return await self._outside(effect.pushed, effect.checked, effect.commit, effect.tree, diff)

    # -- helpers ---------------------------------------------------------------------------

    @property
    def trunk(self) -> str:
        return self.policy.trunk

    async def _siblings(self, case: RedCase) -> history.Siblings:
        return await asyncio.to_thread(
            history.siblings, self.repo, case.head, case.onto, case.who.unit
        )

    async def _diff(self, green: str | None, pushed: str) -> str:
        if green is None:
            return ""
        return await asyncio.to_thread(history.diff_commits, self.repo, green, pushed)

    async def _outside(
        self, pushed: str, checked: Tested, commit: str, tree: str, diff: str
    ) -> Sequence[MergerIntent]:
        try:
            author = await asyncio.to_thread(repository.author_of, self.repo, pushed)
        except RepoError:
            author = "unknown"
        events = facts.outside_reverted(
            self.project,
            self.actor,
            self.trunk,
            pushed,
            checked,
            commit=commit,
            tree=tree,
            diff=diff,
            author=author,
        )
        return [PublishBatch(tuple(events))]
