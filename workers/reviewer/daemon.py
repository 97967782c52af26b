"""The reviewer daemon: one code-cold review per ready head, and the convergence rules.

It serves the projects whose repository configures a ``[review] command`` (one
``--repo`` each) and runs on the daemon kernel: the decision (:mod:`.decide`, with the
rounds in :mod:`.rounds`) is pure over the folded state; this module is the shell that
carries out its two effects:

* ``change``: read a unit's diff, its branch point and who touched it from the
  repository, and report it to the decision as the ``changes`` observation;
* ``review``: run the reviewer command through the agent runner, in a read-only copy of
  the head (shown to it read-only, its working directory; its own worktree is an empty
  folder), with exactly the diff, the gate results, the criteria and the decisions
  ``long`` mode picked alone on stdin, and turn what it printed into the assigned
  reviewer's verdict claim, or into a reviewer failure; a limit the sandbox saw the
  command hit is a ``sandbox-breach`` finding in the same batch
  (:mod:`workers.agents.breaches`).

A review runs in the background (one per open request); stopping the daemon kills the
command with everything it started, and the next daemon runs the request again.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import assert_never

import msgspec
import structlog

from projections import (
    builds,
    charter,
    convergence,
    findings,
    gates,
    leases,
    lessons,
    reviews,
    units,
)
from projections.reviews import RequestView
from schemas import Actor, utcnow
from workers.agents import unsandboxed
from workers.agents.breaches import AgentRun, with_breach
from workers.agents.command import argv_of
from workers.agents.config import RepoConfig
from workers.agents.runner import run_agent
from workers.agents.workspace import read_only_copy, remove, workdir
from workers.kernel import Daemon, Kernel, World
from workers.kernel.lease_holding import answered_under_lease
from workers.leases.deadlines import per_project
from workers.leases.decide import Policy, holder_name, leased
from workers.remote import fetch_missing
from workers.repository import unit_change
from workers.reviewer import decide as policy
from workers.reviewer import verdicts
from workers.reviewer.diff import parse_unified_diff
from workers.reviewer.effects import ReadChange, ReviewerEffect, ReviewerIntent, RunReview
from workers.reviewer.scene import CHANGES, Change

log = structlog.get_logger()

KEPT_CHANGES = 256
"""Diffs kept for the decision; the oldest are forgotten (and read again if needed)."""


class Reviewer(Daemon[ReviewerEffect]):
    """Review ready heads and close rounds for the projects in ``configs``."""

    name = "reviewer"
    # Its replicas split reviews by item leases, not by projects.
    shares_projects = False
    # The charter fold: its test criteria are frozen artifacts (violations() in decide);
    # the lessons fold: the lessons in force go into the reviewer's document.
    folds = (
        units.FOLD,
        findings.FOLD,
        gates.FOLD,
        convergence.FOLD,
        reviews.FOLD,
        builds.FOLD,
        leases.FOLD,
        charter.FOLD,
        lessons.FOLD,
    )

    def __init__(
        self,
        configs: Mapping[str, RepoConfig],
        *,
        actor: Actor | None = None,
        lease_ttl_s: float | None = None,
        jobs: int = 4,
    ):
        served = {p: c for p, c in configs.items() if c.review.command}
        super().__init__(projects=tuple(served), actor=actor)
        self.configs = served
        self.changes: OrderedDict[tuple[str, str, str], Change | str] = OrderedDict()
        self.kernel: Kernel[ReviewerEffect] | None = None
        self.lease: Policy | None = None
        if lease_ttl_s is not None:  # replicas split the reviews, each run once
            # A review is one agent run within review.timeout.
            deadlines = per_project((p, c.review.timeout_s) for p, c in served.items())
            self.lease = Policy(holder_name(self.actor), lease_ttl_s, max(jobs, 1), deadlines)
            self.tick_s = lease_ttl_s / 3  # notice a lapsed lease without a new event

    def repo_for(self, project: str) -> Path | None:
        config = self.configs.get(project)
        return Path(config.repo) if config is not None else None

    async def start(self, kernel: Kernel[ReviewerEffect]) -> None:
        self.kernel = kernel
        unsandboxed.wake(kernel, self.configs)

    def decide(self, world: World) -> Sequence[ReviewerIntent]:
        config = self.configs.get(world.project)
        if config is None:
            return ()
        intents = [*policy.decide(world, config), *unsandboxed.decide(world, config)]
        if self.lease is None:
            return intents
        return leased(world, intents, RunReview, "review", self.lease, _review_of)

    async def perform(self, effect: ReviewerEffect) -> Sequence[ReviewerIntent]:
        config = self.configs[effect.project]
        match effect:
            case ReadChange(head=head, hint=hint):
                await self.read_change(config, head, hint)
                return ()
            case RunReview(request=request):
                assert self.kernel is not None

                async def work() -> list[ReviewerIntent]:
                    return [await self.review(config, request, effect)]

                return await answered_under_lease(self.kernel.bus, self.actor, effect, work())
            case _:
                assert_never(effect)

    # -- reading a unit's change -------------------------------------------------------------

    async def read_change(self, config: RepoConfig, head: str, hint: str | None) -> None:
        """Read the diff and report it (or why it cannot be read) to the decision."""
        try:
            found: Change | str = await self.change(config, head, hint)
        except Exception as exc:  # whatever the repository raised, the unit escalates with it
            log.warning("review.diff_failed", project=config.project, head=head, error=str(exc))
            found = str(exc)
        self._remember((config.project, head, hint or ""), found)
        assert self.kernel is not None
        self.kernel.observe(CHANGES, self.changes, project=config.project)

    async def change(self, config: RepoConfig, head: str, hint: str | None) -> Change:
        """The unit's change at ``head`` (from the cache when it was read already)."""
        cached = self.changes.get((config.project, head, hint or ""))
        if isinstance(cached, Change):
            return cached
        await asyncio.to_thread(fetch_missing, config.repo, head)  # pushed since our fetch
        raw = await asyncio.to_thread(
            unit_change, config.repo, head, dispatched=hint, trunk=config.review.trunk
        )
        return Change(
            head=raw.head,
            base=raw.base,
            diff=parse_unified_diff(raw.diff_text),
            identities=raw.identities,
            config_before=raw.config_before,
            config_after=raw.config_after,
            tree=raw.tree,
        )

    def _remember(self, key: tuple[str, str, str], found: Change | str) -> None:
        self.changes[key] = found
        self.changes.move_to_end(key)
        while len(self.changes) > KEPT_CHANGES:
            self.changes.popitem(last=False)

    # -- running the reviewer command --------------------------------------------------------

    async def review(
        self, config: RepoConfig, request: RequestView, args: RunReview
    ) -> ReviewerIntent:
        """Run the reviewer on a read-only copy of the head; its verdict, or a failure."""
        assert config.review.command is not None
        change = await self.change(config, request.head, request.base)
        document = {
            "diff": change.diff.text,
            "gate_results": args.gate_results,
            "criteria": list(request.criteria),
            "decisions": args.decisions,
            "lessons": args.lessons,
        }
        # The reviewer's uid must reach its copy inside the folder.
        folder = await asyncio.to_thread(workdir, "loopbus-review-", mode=0o755)
        copy, scratch = folder / "tree", folder / "work"
        roots = (str(copy), str(copy.resolve()))
        try:
            copy.mkdir()
            scratch.mkdir()
            try:
                await asyncio.to_thread(read_only_copy, config.repo, request.head, copy)
            except Exception as exc:  # whatever stopped the checkout is the reviewer's failure
                reason = f"could not prepare the read-only copy: {exc}"
                return self._failed(config, request, reason)
            result = await run_agent(
                config,
                argv_of(config.review.command, {"reviewer": request.reviewer}),
                stdin=msgspec.json.encode(document),
                worktree=scratch,
                read_only=(copy,),
                cwd=copy,
                timeout_s=config.review.timeout_s,
                env={"LOOPBUS_REVIEWER": request.reviewer},
            )
        finally:
            await asyncio.to_thread(remove, folder)
        now = utcnow()
        answer = verdicts.answer(
            config.project,
            request,
            result,
            timeout_s=config.review.timeout_s,
            blocking=config.review.blocking,
            roots=roots,
            actor=self.actor,
            now=now,
        )
        log.info("review.ran", unit=request.unit, request=request.id, answer=type(answer).__name__)
        run = AgentRun(
            project=config.project,
            system=self.actor,
            role="reviewer",
            answers=request.id,
            principal=request.reviewer,
            unit=request.unit,
        )
        return with_breach(answer, run, result.breaches, result.executor, now)

    def _failed(self, config: RepoConfig, request: RequestView, reason: str) -> ReviewerIntent:
        log.warning("review.failed", unit=request.unit, reason=reason)
        return verdicts.reviewer_failed(
            config.project, request, reason, b"", actor=self.actor, now=utcnow()
        )


def _review_of(effect: RunReview) -> str:
    request = effect.request
    return f"review of unit {request.unit} round {request.round}"
