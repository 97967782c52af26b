"""The investigator daemon: on the second failure of anything, one investigation.

It folds ``projections.investigations`` for each project it serves (``--repo`` with an
``[investigator] command``). When a trigger reaches its second failure it publishes an
``InvestigationRequested`` conditionally on the trigger's own subject being empty, so the
request exists at most once even with a restart or a second daemon in between; then it
runs the command with the evidence and publishes its output as one finding (class
``investigation``, never code) together with ``InvestigationCompleted``, atomically.

A request with no completion on the log when the daemon starts is run again: the one
investigation of a trigger is the one that completes.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import structlog
from loopbus.bus import TransitionConflict
from loopbus.projections import investigations as inv
from loopbus.schemas import Actor, FindingRaised, project_subjects
from loopbus.schemas.findings import Severity
from loopbus.schemas.reviews import (
    InvestigationCompleted,
    InvestigationReport,
    InvestigationRequested,
)
from loopbus.schemas.targets import RecordTarget, Target
from loopbus.workers.reviewer.command import argv_of, run_command
from loopbus.workers.reviewer.config import RepoConfig
from loopbus.workers.runtime import DaemonContext, LiveFold, follow

log = structlog.get_logger()

OWNERS = {"unit-failed": "operator", "trunk-red": "planner", "gate-error": "standards"}
"""Who an investigation's finding is routed to, by trigger kind: a unit failing twice is
the operator's to weigh, a trunk red twice on one interface is a contract question for
planning, and a gate erroring twice is the machinery's (standards)."""

_report = msgspec.json.Decoder(InvestigationReport)


def parse_report(stdout: bytes) -> InvestigationReport | str:
    """The investigator's answer: a JSON report, or plain text taken as its summary."""
    text = stdout.strip()
    if not text:
        return "printed nothing; expected a JSON report or a plain-text summary"
    if text.startswith(b"{"):
        try:
            return _report.decode(text)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            return f"wrong report schema: {exc}"
    summary = text.decode("utf-8", "replace")
    return InvestigationReport(summary=summary[:8000])


class Investigator:
    def __init__(self, ctx: DaemonContext, configs: dict[str, RepoConfig]):
        self.ctx = ctx
        self.bus = ctx.bus
        self.configs = {p: c for p, c in configs.items() if c.investigator.command}
        self.fold = LiveFold((inv.FOLD,))
        self.actor = Actor(role="system", principal=ctx.name)
        self.seen = 0
        self.barrier = 0
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.given_up: set[str] = set()

    async def run(self) -> None:
        if not self.configs:
            log.info("investigator.idle", reason="no project configures [investigator] command")
            await self.ctx.stop.wait()
            return
        subjects = [project_subjects(p) for p in self.configs]
        try:
            async for record, live in follow(self.ctx, subjects=subjects):
                assert record.event is not None
                self.fold.apply(record.event)
                self.seen = record.seq
                if (live or record.pending == 0) and self.seen >= self.barrier:
                    await self.step(record.event.project)
        finally:
            running = list(self.tasks.values())
            for task in running:
                task.cancel()
            # let each command be killed and its temporary copy removed before returning
            await asyncio.gather(*running, return_exceptions=True)

    async def step(self, project: str) -> None:
        config = self.configs.get(project)
        if config is None:
            return
        state: inv.InvestigationsState = self.fold.states(project)["investigations"]
        for view in inv.due(state):
            if view.trigger in self.given_up:
                continue
            try:
                if await self.request(config, view):
                    return
            except TransitionConflict:
                return  # someone requested it first; the fold will show it
            except Exception as exc:
                self.given_up.add(view.trigger)
                log.exception("investigation.request_failed", trigger=view.trigger, error=str(exc))
        for view in inv.running(state):
            request = view.requested
            if request is not None and request not in self.tasks and request not in self.given_up:
                task = asyncio.create_task(self.investigate(config, view))
                self.tasks[request] = task
                task.add_done_callback(lambda _t, rid=request: self.tasks.pop(rid, None))

    async def request(self, config: RepoConfig, view: inv.TriggerView) -> bool:
        event = InvestigationRequested(
            project=config.project,
            actor=self.actor,
            trigger=view.trigger,
            trigger_kind=view.kind,
            key=view.key,
            failures=list(view.failures),
            unit=view.unit,
            evidence={"failures": view.evidence},
        )
        # Nothing may be on the trigger's subject yet: that is what makes it one request.
        ack = await self.bus.publish_transition(event, 0)
        self.barrier = max(self.barrier, ack.seq)
        log.info("investigation.requested", trigger=view.trigger)
        return True

    async def investigate(self, config: RepoConfig, view: inv.TriggerView) -> None:
        try:
            await self._investigate(config, view)
        except Exception as exc:
            if view.requested is not None:
                self.given_up.add(view.requested)
            log.exception("investigation.crashed", trigger=view.trigger, error=str(exc))

    async def _investigate(self, config: RepoConfig, view: inv.TriggerView) -> None:
        assert config.investigator.command is not None and view.requested is not None
        document: dict[str, Any] = {
            "trigger": view.trigger,
            "kind": view.kind,
            "unit": view.unit,
            "failures": view.evidence,
        }
        workdir = Path(tempfile.mkdtemp(prefix="loopbus-investigation-"))
        try:
            result = await run_command(
                argv_of(config.investigator.command, {"trigger": view.trigger}),
                stdin=msgspec.json.encode(document),
                cwd=workdir,
                timeout_s=config.investigator.timeout_s,
                env={"LOOPBUS_REPO": config.repo, "LOOPBUS_TRIGGER": view.trigger},
            )
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        failure = result.failure(config.investigator.timeout_s)
        answer = failure if failure is not None else parse_report(result.stdout)
        linked: Target = RecordTarget(id=view.failures[-1] if view.failures else view.requested)
        evidence: dict[str, Any] = {
            "trigger": view.trigger,
            "investigation": view.requested,
            "failures": list(view.failures),
        }
        if isinstance(answer, str):
            severity: Severity = "medium"
            finding = FindingRaised(
                project=config.project,
                actor=self.actor,
                producer="meta_rule",  # the second-failure rule; the seven producers are closed
                target=linked,
                severity=severity,
                criterion="investigation-failed",
                cls="meta",
                message=f"the investigation of {view.trigger} produced no report: {answer}",
                evidence={**evidence, "reason": answer},
                unit=view.unit,
                owner="standards",
            )
            outcome = "error"
        else:
            finding = FindingRaised(
                project=config.project,
                actor=self.actor,
                producer="meta_rule",  # the second-failure rule; the seven producers are closed
                target=answer.target or linked,
                severity=answer.severity,
                criterion=answer.criterion or view.kind,
                cls="investigation",
                message=answer.summary,
                evidence={**answer.evidence, **evidence},
                unit=view.unit,
                owner=OWNERS[view.kind],
            )
            outcome = "finding"
        completed = InvestigationCompleted(
            project=config.project,
            actor=self.actor,
            request=view.requested,
            trigger=view.trigger,
            key=view.key,
            finding=finding.id,
            outcome=outcome,  # type: ignore[arg-type]
            cause=view.requested,
        )
        acks = await self.bus.publish_atomic([finding, completed])
        self.barrier = max(self.barrier, max(a.seq for a in acks))
        log.info("investigation.completed", trigger=view.trigger, outcome=outcome)
