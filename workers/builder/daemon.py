"""The builder daemon: runs a project's ``[build] command`` for every round a unit owes.

The policy is :mod:`.decide` (pure); this module is the shell that carries out one
effect, ``build``:

1. check the round's start commit out into a private worktree made for the round,
   ``<tmp>/loopbus-build-<random>/tree`` (the dispatch base, then the unit's head): outside
   the data directory (0700, the daemon's alone), and in a folder of its own only the
   round's uid is lent, so no other round's agent can list or write it;
2. write the brief (:class:`schemas.builds.Brief`) to the command's stdin and run
   it in the worktree through the agent runner (:mod:`workers.agents.runner`): a
   sandbox, a scrubbed environment (no NATS address, no credentials), everything it
   started killed past the timeout; the daemon (never the agent) keeps a heartbeat for the
   unit in the heartbeat bucket for as long as it runs;
3. read its envelope; a malformed one (or a crash, or a timeout) is run once more with the
   problem in the brief, then the unit gives up;
4. commit the worktree on the start commit with the builder principal as author, on the
   branch ``loopbus/<project>/<unit>`` of the project's repository (the agent never
   commits), and hand the envelope to :mod:`.answers`.

A round on a head whose merge conflicted with trunk starts from the merge of trunk's head
into it, carries the conflict in the brief, refuses an answer that leaves conflict markers
(retried once with the problem, like a malformed envelope), and commits a merge of trunk
into the unit (:mod:`.conflict`).

Claims are published under the unit's holder once a builder holds it, else its roster
principal (``actor.role = builder``, see :func:`.decide.claimant`), so the units daemon
judges them like any builder's; facts (decisions, findings) as system.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import assert_never

import msgspec
import structlog

from bus import HEARTBEAT_BUCKET, Bus
from projections import builds, convergence, decisions, findings, leases, lessons, units
from projections.intents import PublishBatch
from schemas import Actor, Event
from schemas.builds import Brief, BriefCriterion, BuildEnvelope, decode_envelope
from schemas.reports import HeartbeatReport, encode_heartbeat, heartbeat_key
from workers.agents import unsandboxed
from workers.agents.breaches import breach_finding
from workers.agents.command import CommandResult, argv_of
from workers.agents.config import RepoConfig
from workers.agents.runner import run_agent
from workers.agents.workspace import remove, workdir
from workers.builder import answers, conflict, worktree
from workers.builder.criteria import criterion_text
from workers.builder.decide import decide
from workers.builder.effects import BuilderEffect, BuilderIntent, BuildRound, RoundBrief
from workers.kernel import Daemon, Kernel, World
from workers.kernel.lease_holding import answered_under_lease
from workers.leases.deadlines import per_project
from workers.leases.decide import Policy, holder_name, leased
from workers.remote import fetch_missing, publish_branch
from workers.repository import commit_at, open_repo, trunk_commit
from workers.runtime import cancel_all

log = structlog.get_logger()

HEARTBEAT_S = 2.0
JOBS = 8
"""Rounds one leasing replica runs at once (each an agent command)."""


class Builder(Daemon[BuilderEffect]):
    """Run builder rounds for the projects in ``configs`` (those with a build command)."""

    name = "builder"
    # Its replicas split rounds by item leases, not by projects.
    shares_projects = False
    folds = (
        units.FOLD,
        findings.FOLD,
        convergence.FOLD,
        builds.FOLD,
        decisions.FOLD,
        leases.FOLD,
        lessons.FOLD,
    )

    def __init__(
        self,
        bus: Bus,
        configs: Mapping[str, RepoConfig],
        data_dir: Path,
        *,
        actor: Actor | None = None,
        heartbeat_s: float = HEARTBEAT_S,
        lease_ttl_s: float | None = None,
        jobs: int = JOBS,
    ) -> None:
        served = {p: c for p, c in configs.items() if c.build.command}
        super().__init__(projects=tuple(served), actor=actor)
        self.bus = bus
        self.configs = served
        self.data_dir = data_dir
        self.heartbeat_s = heartbeat_s
        self.lease: Policy | None = None
        if lease_ttl_s is not None:  # replicas split the rounds, each run by one of them
            # A round runs its command at most twice (retried once), each within build.timeout.
            deadlines = per_project((p, 2 * c.build.timeout_s) for p, c in served.items())
            self.lease = Policy(holder_name(self.actor), lease_ttl_s, max(jobs, 1), deadlines)
            self.tick_s = lease_ttl_s / 3  # notice a lapsed lease without a new event

    def repo_for(self, project: str) -> Path | None:
        config = self.configs.get(project)
        return Path(config.repo) if config is not None else None

    async def start(self, kernel: Kernel[BuilderEffect]) -> None:
        unsandboxed.wake(kernel, self.configs)

    def decide(self, world: World) -> Sequence[BuilderIntent]:
        config = self.configs.get(world.project)
        if config is None:
            return ()
        intents = [*decide(world, config.build), *unsandboxed.decide(world, config)]
        if self.lease is None:
            return intents
        return leased(world, intents, BuildRound, "build", self.lease, _round_of)

    async def perform(self, effect: BuilderEffect) -> Sequence[BuilderIntent]:
        match effect:
            case BuildRound():
                # Under a lease, the round's release follows its answer (free once stored).
                work = self.build_round(self.configs[effect.project], effect)
                return await answered_under_lease(self.bus, self.actor, effect, work)
            case _:
                assert_never(effect)

    async def build_round(self, config: RepoConfig, args: BuildRound) -> list[BuilderIntent]:
        """One round: worktree, command (retried once), commit, answer."""
        skeleton = args.brief
        unit = skeleton.unit
        repo = Path(config.repo)
        builder = Actor(role="builder", principal=args.principal)
        round_ = answers.Round(
            project=config.project,
            unit=unit,
            slice=skeleton.slice,
            trigger=args.trigger,
            system=self.actor,
            builder=builder,
            number=skeleton.round,
            rung=skeleton.rung,
        )
        start = skeleton.start
        if not start:  # neither a head nor a dispatch base on the log: trunk's head
            start = await asyncio.to_thread(_trunk, repo, config)
        brief = await asyncio.to_thread(_brief, repo, start, skeleton)
        brief, merged = await asyncio.to_thread(_collision, repo, config, brief, args)
        branch = worktree.branch(config.project, unit)
        # 0711: the round's uid may pass through to the worktree it is lent, not list.
        folder = await asyncio.to_thread(workdir, "loopbus-build-", mode=0o711)
        where = folder / "tree"
        # What the sandbox saw each run hit (its observation, not the agent's word).
        breached: list[Event] = []
        try:
            first_problem: str | None = None
            while True:
                await asyncio.to_thread(_prepare, repo, start, where, branch, merged)
                result = await self._run(config, brief, where, builder)
                if result.breaches:
                    breached.append(
                        breach_finding(
                            round_.agent_run(),
                            result.breaches,
                            result.executor,
                            attempt=len(breached) + 1,
                        )
                    )
                outcome = _envelope(result, config.build.timeout_s)
                if isinstance(outcome, BuildEnvelope):
                    outcome = await asyncio.to_thread(_unresolved, outcome, where, merged)
                if isinstance(outcome, BuildEnvelope):
                    break
                log.warning(
                    "build.malformed", unit=unit, problem=outcome, retried=bool(first_problem)
                )
                if first_problem is not None:
                    return [
                        *_published(breached),
                        answers.failed_twice(round_, first_problem, outcome),
                    ]
                first_problem = outcome
                brief = msgspec.structs.replace(brief, problem=outcome)
            sha: str | None = None
            if outcome.status in ("completed", "partial") and not outcome.novel_decisions:
                sha = await asyncio.to_thread(
                    worktree.commit_worktree,
                    repo,
                    where,
                    parent=start,
                    author=f"{builder.principal} <{builder.principal}@builders.loopbus.invalid>",
                    message=_message(brief, outcome),
                    ref=branch,
                    merged=merged.trunk if merged is not None else None,
                )
                await asyncio.to_thread(_publish, repo, branch, sha or start)
        finally:
            await asyncio.to_thread(remove, folder)
        log.info("build.answered", unit=unit, status=outcome.status, sha=sha)
        closed: list[Event] = [conflict.resolved(round_, merged, sha)] if merged and sha else []
        return [
            *_published(breached),
            *_published(closed),
            *answers.answered(round_, outcome, config.build, sha=sha, first_problem=first_problem),
        ]

    async def _run(
        self, config: RepoConfig, brief: Brief, where: Path, builder: Actor
    ) -> CommandResult:
        assert config.build.command is not None
        stop = asyncio.Event()
        beating = asyncio.create_task(self._heartbeat(config.project, brief.unit, builder, stop))
        try:
            return await run_agent(
                config,
                argv_of(config.build.command, {"builder": builder.principal, "unit": brief.unit}),
                stdin=msgspec.json.encode(brief),
                worktree=where,
                timeout_s=config.build.timeout_s,
                env={
                    "LOOPBUS_UNIT": brief.unit,
                    "LOOPBUS_PROJECT": brief.project,
                    "LOOPBUS_ROUND": str(brief.round),
                    "LOOPBUS_BUILDER": builder.principal,
                },
            )
        finally:
            stop.set()
            await cancel_all([beating])  # a cancel lost in a beat's put must not hang here

    async def _heartbeat(
        self, project: str, unit: str, builder: Actor, stop: asyncio.Event
    ) -> None:
        """Keep the unit alive in the heartbeat bucket while its command runs.

        Written with the daemon's (system) credential, the only one that may write the
        bucket, and naming ``builder``, the principal whose started report made it the
        unit's holder: the watchdog counts no one else's beat (workers/watchdog/holders.py).
        Ends when ``stop`` is set, not only when cancelled: a cancel that lands inside the
        client's ``put`` can be swallowed there, and the loop then beat on (for half a
        minute, in tests) while the round waited for it to end.
        """
        beats = await self.bus.bucket(HEARTBEAT_BUCKET)
        key = heartbeat_key(project, unit)
        while not stop.is_set():
            beat = HeartbeatReport(project=project, unit=unit, actor=builder)
            try:
                await beats.put(key, encode_heartbeat(beat))
            except Exception as exc:  # a missed beat is not the round's failure
                log.warning("build.heartbeat_failed", unit=unit, error=str(exc))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.heartbeat_s)


def _round_of(effect: BuildRound) -> str:
    return f"unit {effect.unit} round {effect.brief.round}"


def _published(events: list[Event]) -> list[BuilderIntent]:
    return [PublishBatch(tuple(events))] if events else []


def _envelope(result: CommandResult, timeout_s: float) -> BuildEnvelope | str:
    """The envelope, or one line saying why there is none."""
    failure = result.failure(timeout_s)
    if failure is not None:
        return f"the command {failure}"
    decoded = decode_envelope(result.stdout)
    return decoded if isinstance(decoded, BuildEnvelope) else decoded.line()


def _collision(
    repo: Path, config: RepoConfig, brief: Brief, args: BuildRound
) -> tuple[Brief, conflict.Merged | None]:
    """For a round on a head that collided with trunk: trunk's head merged into it, and
    the brief that says so (see :mod:`.conflict`)."""
    collision = args.conflict
    if collision is None:
        return brief, None
    merged = conflict.merge(repo, brief.base, _trunk(repo, config), finding=collision.finding)
    return msgspec.structs.replace(brief, conflict=merged.brief()), merged


def _prepare(
    repo: Path, start: str, where: Path, branch: str, merged: conflict.Merged | None
) -> None:
    fetch_missing(repo, start)  # the base may be newer than this machine's last fetch
    if merged is None:
        worktree.prepare(repo, start, where, branch=branch)
    else:
        worktree.fresh(where)
        conflict.prepare(repo, merged, where, branch=branch)


def _publish(repo: Path, branch: str, commit: str) -> None:
    """The unit's branch on the remote before its answer names it (a local repository
    already has it): the reviewer and the merger read it from their own mirrors."""
    with open_repo(repo) as opened:
        full = commit_at(opened, commit).id.decode()
    publish_branch(repo, branch, full)


def _unresolved(
    envelope: BuildEnvelope, where: Path, merged: conflict.Merged | None
) -> BuildEnvelope | str:
    """The envelope, or why its worktree is refused: conflict markers left in a conflicting
    file of a round that says it is done (``blocked``, ``failed`` … commit nothing)."""
    if merged is None or envelope.status not in ("completed", "partial"):
        return envelope
    if envelope.novel_decisions:
        return envelope
    return conflict.markers_left(where, merged) or envelope


def _trunk(repo: Path, config: RepoConfig) -> str:
    with open_repo(repo) as opened:
        return str(trunk_commit(opened, config.review.trunk).id.decode())


def _brief(repo: Path, start: str, skeleton: RoundBrief) -> Brief:
    """The brief: the decision's skeleton plus what only the repository knows (the
    criteria's test text and the design document, both at the round's start)."""
    criteria = [
        BriefCriterion(test=test, text=criterion_text(worktree.read_file, repo, start, test))
        for test in skeleton.criteria
    ]
    design_ref = skeleton.design_ref
    design = worktree.read_file(repo, start, design_ref) if design_ref else ""
    return Brief(
        project=skeleton.project,
        slice=skeleton.slice,
        unit=skeleton.unit,
        title=skeleton.title,
        files=list(skeleton.files),
        criteria=criteria,
        design_ref=design_ref,
        design=design,
        base=start,
        round=skeleton.round,
        findings=list(skeleton.findings),
        rung=skeleton.rung,
        tactic=skeleton.tactic,
        decisions=list(skeleton.decisions),
        superseded=list(skeleton.superseded),
        lessons=list(skeleton.lessons),
        problem=skeleton.problem,
    )


def _message(brief: Brief, envelope: BuildEnvelope) -> str:
    title = brief.title or f"unit {brief.unit}"
    if brief.conflict is not None:
        title = f"merge trunk {brief.conflict.trunk[:12]}, conflicts resolved; {title}"
    summary = envelope.summary.strip()
    body = f"\n\n{summary}" if summary else ""
    return (
        f"{brief.unit}: {title} (round {brief.round}){body}\n\n"
        f"Loopbus-Unit: {brief.unit}\nLoopbus-Project: {brief.project}\n"
    )
