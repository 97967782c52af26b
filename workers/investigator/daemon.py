"""The investigator daemon: on the second failure of anything, one investigation.

It folds ``projections.investigations`` for each project it serves (``--repo`` with an
``[investigator] command``) and runs on the daemon kernel: the decision
(:mod:`.decide`) requests an investigation once per trigger; this module is the shell
that runs the command with the evidence and hands its answer back to be published as
one finding and the completion, atomically.

The command runs through the agent runner, in a read-only copy of trunk (its working
directory, also named by ``LOOPBUS_REPO``): the files, never the shared repository or its
``.git``. Its own worktree is an empty folder.

A limit the sandbox saw the command hit is a ``sandbox-breach`` finding, published with
the completion (:mod:`workers.agents.breaches`).

A request with no completion on the log when the daemon starts is run again: stopping
the daemon kills the command, and the one investigation of a trigger is the one that
completes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import assert_never

import msgspec
import structlog

from projections import findings, leases
from projections import investigations as inv
from schemas import Actor, utcnow
from workers.agents import unsandboxed
from workers.agents.breaches import AgentRun, with_breach
from workers.agents.command import CommandResult, argv_of
from workers.agents.config import RepoConfig
from workers.agents.runner import run_agent
from workers.agents.workspace import read_only_copy, remove, workdir
from workers.investigator.decide import (
    completion,
    decide,
    document,
    parse_report,
)
from workers.investigator.effects import Investigate, InvestigatorEffect, InvestigatorIntent
from workers.kernel import Daemon, Kernel, World
from workers.kernel.lease_holding import answered_under_lease
from workers.leases.deadlines import per_project
from workers.leases.decide import Policy, holder_name, leased
from workers.repository import open_repo, trunk_commit

log = structlog.get_logger()


class Investigator(Daemon[InvestigatorEffect]):
    """Investigate the second failure of anything, for the projects in ``configs``."""

    name = "investigator"
    # Its replicas split investigations by item leases, not by projects.
    shares_projects = False
    folds = (inv.FOLD, findings.FOLD, leases.FOLD)

    def __init__(
        self,
        configs: Mapping[str, RepoConfig],
        *,
        actor: Actor | None = None,
        lease_ttl_s: float | None = None,
        jobs: int = 4,
    ):
        served = {p: c for p, c in configs.items() if c.investigator.command}
        super().__init__(projects=tuple(served), actor=actor)
        self.configs = served
        self.kernel: Kernel[InvestigatorEffect] | None = None
        self.lease: Policy | None = None
        if lease_ttl_s is not None:  # replicas split the investigations, each run once
            # An investigation is one agent run within investigator.timeout.
            deadlines = per_project((p, c.investigator.timeout_s) for p, c in served.items())
            self.lease = Policy(holder_name(self.actor), lease_ttl_s, max(jobs, 1), deadlines)
            self.tick_s = lease_ttl_s / 3  # notice a lapsed lease without a new event

    async def start(self, kernel: Kernel[InvestigatorEffect]) -> None:
        self.kernel = kernel
        unsandboxed.wake(kernel, self.configs)

    def decide(self, world: World) -> Sequence[InvestigatorIntent]:
        config = self.configs.get(world.project)
        if config is None:
            return ()
        intents = [*decide(world), *unsandboxed.decide(world, config)]
        if self.lease is None:
            return intents
        return leased(world, intents, Investigate, "investigation", self.lease, _trigger_of)

    async def perform(self, effect: InvestigatorEffect) -> Sequence[InvestigatorIntent]:
        match effect:
            case Investigate(view=view):
                assert self.kernel is not None

                async def work() -> list[InvestigatorIntent]:
                    return [await self.investigate(self.configs[effect.project], view)]

                return await answered_under_lease(self.kernel.bus, self.actor, effect, work())
            case _:
                assert_never(effect)

    async def investigate(self, config: RepoConfig, view: inv.TriggerView) -> InvestigatorIntent:
        """Run the investigator command on the trigger's evidence; its answer as intents."""
        assert config.investigator.command is not None
        timeout_s = config.investigator.timeout_s
        # The investigator's uid must reach its copy inside the folder.
        folder = await asyncio.to_thread(workdir, "loopbus-investigation-", mode=0o755)
        copy, scratch = folder / "tree", folder / "work"
        try:
            copy.mkdir()
            scratch.mkdir()
            try:
                await asyncio.to_thread(_trunk_copy, config, copy)
            except Exception as exc:  # whatever stopped the checkout is the run's failure
                result = CommandResult(None, b"", b"", 0.0, start_error=f"no trunk copy: {exc}")
            else:
                result = await run_agent(
                    config,
                    argv_of(config.investigator.command, {"trigger": view.trigger}),
                    stdin=msgspec.json.encode(document(view)),
                    worktree=scratch,
                    read_only=(copy,),
                    cwd=copy,
                    timeout_s=timeout_s,
                    env={"LOOPBUS_REPO": str(copy), "LOOPBUS_TRIGGER": view.trigger},
                )
        finally:
            await asyncio.to_thread(remove, folder)
        failure = result.failure(timeout_s)
        answer = failure if failure is not None else parse_report(result.stdout)
        outcome = "error" if isinstance(answer, str) else "finding"
        log.info("investigation.ran", trigger=view.trigger, outcome=outcome)
        now = utcnow()
        done = completion(config.project, view, answer, actor=self.actor, now=now)
        assert view.requested is not None
        run = AgentRun(
            project=config.project,
            system=self.actor,
            role="investigator",
            answers=view.requested,
            unit=view.unit,
        )
        return with_breach(done, run, result.breaches, result.executor, now)


def _trunk_copy(config: RepoConfig, dest: Path) -> None:
    """Trunk's files, read-only, at ``dest`` (blocking)."""
    with open_repo(Path(config.repo)) as opened:
        head = trunk_commit(opened, config.review.trunk).id.decode()
    read_only_copy(config.repo, head, dest)


def _trigger_of(effect: Investigate) -> str:
    return f"investigation of {effect.view.trigger}"
