"""The gate-runner daemon: runs a repository's gates whenever the log asks for them.

It serves one project (the ``[project] id`` of the repository's ``HEAD`` config, or
``--project``) and answers, with a signed :class:`GateSuiteCompleted` whose ``cause`` is
the asking event's id:

* a unit's accepted commit — the units daemon's ``UnitTransitioned`` with ``by="commit"``
  (the claim itself is validated there first; a refused claim costs no gate run);
* a :class:`GateRunRequested` from anyone (the merger asks for trunk candidates this way
  when it does not call :class:`loopbus.workers.gates.runner.GateRunner` itself).

Restart-safe without a checkpoint of its own: on start it reads its subjects to the end,
folds the ``gates`` projection (whose ``answered`` says which causes have a verified
suite), runs only what is still unanswered — for a unit, only its latest commit — and then
follows the log. It also raises one finding for every gate event the projection refused
(a missing, unknown or forged signature); a restart does not raise it again.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog
from loopbus.bus import read
from loopbus.projections import gates as gates_projection
from loopbus.schemas import Event, FindingRaised, UnitTransitioned
from loopbus.schemas.gates import GateRunRequested, GateSuiteCompleted, RunReason
from loopbus.schemas.ids import id_time
from loopbus.schemas.targets import RecordTarget
from loopbus.workers import repository
from loopbus.workers.cli import Body, daemon_parser, main_for
from loopbus.workers.errors import GateError, WorkerError
from loopbus.workers.gates.config import parse_config
from loopbus.workers.gates.runner import GateRunner
from loopbus.workers.gates.signing import (
    DEFAULT_NAME,
    KEY_DIR_ENV,
    load_existing,
    load_or_create,
)
from loopbus.workers.runtime import DaemonContext

log = structlog.get_logger()

RETRIES = 3
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


@dataclass(frozen=True)
class Job:
    """One ask: run the gates of ``commit`` and answer ``cause``."""

    cause: str
    commit: str
    unit: str | None
    reason: RunReason
    checks: tuple[str, ...] = ()
    force: bool = False


def trigger(event: Event) -> Job | None:
    """The job an event asks for, if it asks for one."""
    match event:
        case UnitTransitioned(by="commit", commit=str(commit)):
            return Job(cause=event.id, commit=commit, unit=event.unit, reason="unit")
        case GateRunRequested():
            return Job(
                cause=event.id,
                commit=event.commit,
                unit=event.unit,
                reason=event.reason,
                checks=tuple(event.checks),
                force=event.force,
            )
    return None


def derived_id(seed: str, salt: str) -> str:
    """A ULID fixed by ``seed`` (a ULID) and ``salt``: a repeated answer is de-duplicated."""
    ms = int(id_time(seed).timestamp() * 1000)
    value = (ms << 80) | int.from_bytes(hashlib.sha256(f"{seed}|{salt}".encode()).digest()[:10])
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def project_of(repo: Path) -> str:
    """The project id declared by the repository's ``HEAD`` commit."""
    info = repository.resolve(repo)
    if info.config_text is None:
        raise GateError(f"{repo} has no loopbus.toml at HEAD; pass --project to name the project")
    return parse_config(info.config_text).project


class GateRunnerDaemon:
    """Folds the gate subjects of one project and keeps every ask answered."""

    def __init__(self, ctx: DaemonContext, runner: GateRunner, project: str, jobs: int):
        self.ctx = ctx
        self.runner = runner
        self.project = project
        self.state = gates_projection.initial()
        self.pending: dict[str, Job] = {}
        self.inflight: set[str] = set()
        self.raised: set[str] = set()
        self.queue: asyncio.Queue[Job] = asyncio.Queue()
        self.jobs = max(jobs, 1)
        self.actor = runner.actor

    @property
    def subjects(self) -> list[str]:
        p = f"loop.{self.project}"
        return [
            f"{p}.unit.>",
            f"{p}.gatereq.>",
            f"{p}.gatesuite.>",
            f"{p}.gatekey.>",
            f"{p}.gate.>",
            f"{p}.finding.gate_runner",
        ]

    def observe(self, event: Event) -> None:
        gates_projection.apply(self.state, event)
        job = trigger(event)
        if job is not None and not gates_projection.is_answered(self.state, job.cause):
            if job.unit is not None and job.reason == "unit":
                # A unit's newer commit supersedes its older unanswered ones.
                for cause, old in list(self.pending.items()):
                    if old.unit == job.unit and old.reason == "unit" and cause not in self.inflight:
                        del self.pending[cause]
            self.pending[job.cause] = job
        if (
            isinstance(event, GateSuiteCompleted)
            and event.cause is not None
            and gates_projection.is_answered(self.state, event.cause)
        ):
            self.pending.pop(event.cause, None)

    async def act(self) -> None:
        """Queue unanswered jobs and raise findings for refusals nobody reported yet."""
        for cause, job in list(self.pending.items()):
            if cause not in self.inflight:
                self.inflight.add(cause)
                self.queue.put_nowait(job)
        for refusal in gates_projection.unreported_refusals(self.state):
            if refusal.event in self.raised:
                continue
            self.raised.add(refusal.event)
            await self.ctx.bus.publish(self._refusal_finding(refusal))

    def _refusal_finding(self, refusal: gates_projection.Refusal) -> FindingRaised:
        what = f"check {refusal.check!r}" if refusal.check else refusal.kind
        return FindingRaised(
            id=derived_id(refusal.event, gates_projection.REFUSAL_CRITERION),
            project=self.project,
            actor=self.actor,
            producer="gate_runner",
            target=RecordTarget(id=refusal.event),
            severity="high",
            criterion=gates_projection.REFUSAL_CRITERION,
            cls="refused-transition",
            message=f"gate event {refusal.event} ({what}, runner {refusal.runner!r}) refused: "
            f"{refusal.reason}",
            evidence={"refused": refusal.event, "kind": refusal.kind, "reason": refusal.reason},
            owner="standards",
        )

    async def work(self) -> None:
        while True:
            job = await self.queue.get()
            try:
                await self._run(job)
            finally:
                self.inflight.discard(job.cause)
                self.queue.task_done()

    async def _run(self, job: Job) -> None:
        structlog.contextvars.bind_contextvars(cause=job.cause, commit=job.commit, unit=job.unit)
        delay = 1.0
        for attempt in range(1, RETRIES + 1):
            try:
                suite = await self.runner.run_commit(
                    job.commit,
                    checks=job.checks,
                    unit=job.unit,
                    reason=job.reason,
                    cause=job.cause,
                    force=job.force,
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a daemon never dies on one job: log, retry, move on
                log.warning("gate.suite_failed", attempt=attempt, error=repr(exc))
                if attempt == RETRIES:
                    log.error("gate.suite_abandoned", error=repr(exc))
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.ctx.stop.wait(), delay)
                delay *= 2
                continue
            log.info("gate.suite", outcome=suite.outcome, error=suite.error or None)
            return

    async def watch_trunk(self, ref: str, every_s: float) -> None:
        """Ask for the gates of each new commit ``ref`` points at (an advance by the merger,
        a revert, or an outside push), unless a suite or a request for it already exists."""
        seen: str | None = None
        while not self.ctx.stop.is_set():
            try:
                info = await asyncio.to_thread(repository.resolve, self.runner.repo, ref)
            except WorkerError as exc:
                log.warning("gate.trunk_unreadable", ref=ref, error=str(exc))
            else:
                if info.commit != seen:
                    seen = info.commit
                    await self._ask_for_trunk(info.commit)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.ctx.stop.wait(), every_s)

    async def _ask_for_trunk(self, commit: str) -> None:
        if gates_projection.suite_for(self.state, commit) is not None:
            return
        if any(job.commit == commit for job in self.pending.values()):
            return
        request = GateRunRequested(
            project=self.project, actor=self.actor, commit=commit, reason="trunk"
        )
        log.info("gate.trunk_moved", commit=commit, request=request.id)
        await self.ctx.bus.publish(request)

    async def serve(self, trunk: str | None = None, trunk_poll_s: float = 0.0) -> None:
        last = 0
        async for record in read(self.ctx.bus, subjects=self.subjects):
            last = self.ctx.last_seq = record.seq
            if record.event is not None:
                self.observe(record.event)
        log.info("gate.caught_up", seq=last, unanswered=len(self.pending))
        workers = [asyncio.create_task(self.work()) for _ in range(self.jobs)]
        if trunk is not None and trunk_poll_s > 0:
            workers.append(asyncio.create_task(self.watch_trunk(trunk, trunk_poll_s)))
        try:
            await self.act()
            async for record in read(
                self.ctx.bus, subjects=self.subjects, start_seq=last + 1, follow=True
            ):
                self.ctx.last_seq = record.seq
                if record.event is None:
                    log.warning("record.undecodable", seq=record.seq, subject=record.subject)
                    continue
                self.observe(record.event)
                await self.act()
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)


async def run(
    ctx: DaemonContext,
    *,
    repo: Path,
    data_dir: Path | None,
    runner_name: str = DEFAULT_NAME,
    project: str | None = None,
    jobs: int = 2,
    trunk: str | None = "HEAD",
    trunk_poll_s: float = 2.0,
) -> None:
    project = project or await asyncio.to_thread(project_of, repo)
    signer = await asyncio.to_thread(load_or_create, data_dir, runner_name)
    runner = GateRunner(
        ctx.bus,
        repo,
        signer,
        principal=f"gate-runner@{socket.gethostname()}",
        jobs=jobs,
        project=project,
    )
    await runner.cache(project)  # registers the runner's key before any result
    log.info("gate.serving", project=project, repo=str(repo), runner=signer.runner)
    await GateRunnerDaemon(ctx, runner, project, jobs).serve(trunk, trunk_poll_s)


async def idle(ctx: DaemonContext) -> None:
    """Without a repository there is nothing to gate: say so once, stay up until stopped."""
    log.warning("gate.idle", reason="no --repo or LOOPBUS_REPO: no repository to gate")
    await ctx.stop.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("gate_runner", "Run a repository's gates when the log asks.")
    parser.add_argument(
        "--repo",
        type=Path,
        default=os.environ.get("LOOPBUS_REPO"),
        help="the target repository (default: $LOOPBUS_REPO)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help=f"keep the signing key in DATA_DIR/keys (default: ${KEY_DIR_ENV}, else "
        "$XDG_DATA_HOME/loopbus/keys, else ~/.local/share/loopbus/keys)",
    )
    parser.add_argument(
        "--runner-name", default=DEFAULT_NAME, help="the key's name (default %(default)s)"
    )
    parser.add_argument(
        "--project", default=None, help="project id (default: from the repo's loopbus.toml)"
    )
    parser.add_argument(
        "--jobs", type=int, default=2, help="suites and checks run at once (default 2)"
    )
    parser.add_argument(
        "--trunk", default="HEAD", help="the ref whose new commits are gated (default HEAD)"
    )
    parser.add_argument(
        "--trunk-poll",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="how often to look at --trunk; 0 turns trunk watching off (default %(default)s)",
    )

    def make_body(args: argparse.Namespace) -> Body:
        if args.repo is None:
            return idle
        if args.jobs < 1:
            parser.error(f"--jobs {args.jobs}: give 1 or more")
        try:  # a wrong repo or key is one line and exit 2, before connecting to anything
            project = args.project or project_of(args.repo)
            load_existing(args.data_dir, args.runner_name)  # a new key waits for the bus
        except WorkerError as exc:
            parser.exit(2, f"{parser.prog}: error: {exc}\n")
        return lambda ctx: run(
            ctx,
            repo=args.repo,
            data_dir=args.data_dir,
            runner_name=args.runner_name,
            project=project,
            jobs=args.jobs,
            trunk=args.trunk,
            trunk_poll_s=args.trunk_poll,
        )

    return main_for("gate-runner", parser, make_body, argv)
