"""The units daemon: turns claims into transitions, or into findings saying why not.

It folds the log (units, findings, gates), and once it has caught up with the log it
answers, per unit and in log order, every report the units projection still holds as
unanswered: :func:`loopbus.projections.claims.decide` gives a :class:`Move`, published with the
expected last sequence of the unit's subject, or a :class:`Refusal`, published as a
``refused-transition`` finding. It also keeps each working unit's ready flag in step with
the verified gate suite for its head commit.

Restart-safe and safe to run twice: what is unanswered is derived from the log (an answer
names its report), an answer's id is derived from the report it answers (so a second
daemon publishing the same answer is de-duplicated by the log), and a transition that
loses a race is not retried blindly: the loser waits to fold what won, and decides again.
"""

from __future__ import annotations

import os
import socket
from collections import deque
from collections.abc import Sequence
from pathlib import Path

import structlog
from loopbus.bus import Bus, BusError, Record, read
from loopbus.projections import findings as findings_fold
from loopbus.projections import gates as gates_fold
from loopbus.projections import units as units_fold
from loopbus.projections.claims import Move, References, Refusal, decide, gates, verb
from loopbus.projections.findings import FindingsState
from loopbus.projections.units import REFUSAL_CLASS, UnitsState
from loopbus.schemas import Actor, Event, FindingRaised, Producer
from loopbus.schemas.gates import GateSuiteCompleted
from loopbus.schemas.reports import UnitReport
from loopbus.schemas.targets import RecordTarget
from loopbus.schemas.units import UnitTransitioned
from loopbus.workers.runtime import DaemonContext
from loopbus.workers.units.checks import DeclaredChecks, declared_checks
from loopbus.workers.units.live import UnitsLive, answer_id, publish_move, raise_if_cancelled

log = structlog.get_logger()

ANSWER_SALT = "answer"
ANSWERED_KEPT = 10_000
GATES_SALT = "gates"


def system_actor(name: str) -> Actor:
    return Actor(role="system", principal=f"{name}@{socket.gethostname()}:{os.getpid()}")


def refusal_finding(
    project: str,
    report: UnitReport,
    refusal: Refusal,
    units: UnitsState,
    actor: Actor,
    event_id: str,
) -> FindingRaised:
    """The finding a refused claim becomes: produced by the claimant's side (builder or
    operator), about the report, owned by whoever made the claim."""
    view = units.units.get(report.unit)
    name = verb(report)
    producer: Producer = "operator" if report.actor.role == "operator" else "builder"
    return FindingRaised(
        id=event_id,
        project=project,
        actor=actor,
        producer=producer,
        target=RecordTarget(id=report.id),
        severity="medium",
        criterion=refusal.code,
        cls=REFUSAL_CLASS,
        message=f"{name} report refused: {refusal.message}",
        evidence={
            "report": report.id,
            "claim": name,
            "claimant": f"{report.actor.role}:{report.actor.principal}",
            "state": (view.state or "planned") if view else "unplanned",
            "code": refusal.code,
        },
        unit=report.unit,
        slice=view.slice if view and view.slice else None,
        owner="operator" if producer == "operator" else f"builder:{report.unit}",
    )


class UnitsDaemon:
    """The deciding core, separate from the read loop so tests can drive it directly."""

    def __init__(
        self,
        bus: Bus,
        *,
        actor: Actor | None = None,
        checks: DeclaredChecks | None = None,
    ):
        self.bus = bus
        self.actor = actor or system_actor("units")
        self.checks = checks or DeclaredChecks()
        self.live = UnitsLive(folds=(units_fold.FOLD, findings_fold.FOLD, gates_fold.FOLD))
        self.caught_up = False
        self.inflight: dict[tuple[str, str], str] = {}
        """(project, unit) -> the report or suite whose answer we published and have not
        folded yet; nothing else is decided for that unit until it is folded."""
        self.broken: set[str] = set()
        """Reports whose decision raised: logged once, then left alone."""
        self.touched: set[tuple[str, str]] = set()
        """Units whose readiness may need reconciling with their gate suite."""
        self.answered: deque[str] = deque(maxlen=ANSWERED_KEPT)
        """Ids of the latest reports this instance published an answer to, in order."""
        self.published = 0

    # -- the loop ---------------------------------------------------------------------

    async def run(self, ctx: DaemonContext | None, subjects: Sequence[str] = ("loop.>",)) -> None:
        start_last = await self.bus.stream_last_seq()
        async for record in read(self.bus, subjects=subjects, follow=True):
            if ctx is not None:
                ctx.last_seq = record.seq
            await self.on_record(record, caught_up=record.pending == 0 or record.seq >= start_last)
            raise_if_cancelled()

    async def on_record(self, record: Record, *, caught_up: bool) -> None:
        if record.event is None:  # the projector quarantines it; nothing for us to fold
            log.warning("record.undecodable", seq=record.seq, subject=record.subject)
            return
        self.live.apply(record)
        event = record.event
        self.settle(event)
        if isinstance(event, UnitTransitioned | GateSuiteCompleted) and event.unit:
            self.touched.add((event.project, event.unit))
        if caught_up and not self.caught_up:
            self.caught_up = True
            log.info("units.caught_up", seq=record.seq)
            for known in list(self.live.fold.projects):
                await self.answer(known, everything=True)
        elif self.caught_up:
            await self.answer(event.project)
        await self.live.notify()

    # -- answering ----------------------------------------------------------------------

    async def answer(self, project: str, *, everything: bool = False) -> None:
        """Answer the oldest outstanding claim of every unit of ``project``, and reconcile
        readiness with the gate suites for the units whose head, state or suite changed
        (for every unit when ``everything``)."""
        states = self.live.fold.states(project)
        units: UnitsState = states["units"]
        if units.claims:
            await self._answer_claims(project, units)
        if everything:
            names = list(units.units)
        else:
            names = [unit for (p, unit) in self.touched if p == project]
        for unit in names:
            self.touched.discard((project, unit))
            view = units.units.get(unit)
            if view is None or view.state != "working" or view.head is None:
                continue
            try:
                await self._reconcile_ready(project, units, unit, states["gates"])
            except BusError as exc:  # transient: try again with the next record
                self.inflight.pop((project, unit), None)
                self.touched.add((project, unit))
                log.warning("units.publish_failed", unit=unit, error=str(exc))

    async def _answer_claims(self, project: str, units: UnitsState) -> None:
        refs = self._references(project)
        for unit, claims in list(units.claims.items()):
            report = claims[0]
            if (project, unit) in self.inflight or report.id in self.broken:
                continue
            try:
                await self._answer_one(project, units, report, refs)
            except BusError as exc:  # transient: the claim stays outstanding and is retried
                self.inflight.pop((project, unit), None)
                log.warning("units.publish_failed", report=report.id, unit=unit, error=str(exc))
            except Exception as exc:  # a bug must not stop the daemon, nor leave it silent
                self.inflight.pop((project, unit), None)
                self.broken.add(report.id)
                log.exception("units.decide_failed", report=report.id, unit=unit)
                await self._refuse_undecidable(project, units, report, exc)

    async def _refuse_undecidable(
        self, project: str, units: UnitsState, report: UnitReport, exc: Exception
    ) -> None:
        refusal = Refusal(
            report.unit,
            "undecidable",
            f"the units daemon could not decide it ({exc!r}); this is a loopbus defect",
            report=report.id,
        )
        finding = refusal_finding(
            project, report, refusal, units, self.actor, answer_id(report.id, ANSWER_SALT)
        )
        try:
            await self.bus.publish(finding)
        except BusError as publish_error:
            log.warning("units.publish_failed", report=report.id, error=str(publish_error))

    async def _answer_one(
        self, project: str, units: UnitsState, report: UnitReport, refs: References
    ) -> None:
        with structlog.contextvars.bound_contextvars(report=report.id, unit=report.unit):
            await self._decide_and_publish(project, units, report, refs)

    async def _decide_and_publish(
        self, project: str, units: UnitsState, report: UnitReport, refs: References
    ) -> None:
        verdict = decide(units, report, refs)
        event_id = answer_id(report.id, ANSWER_SALT)
        key = (project, report.unit)
        if isinstance(verdict, Move):
            expected = self.live.expected(project, report.unit)
            self.inflight[key] = report.id
            published = await publish_move(
                self.bus, verdict, project, self.actor, event_id, expected
            )
            if published is None:
                # Lost the race: the winner's transition is on its way to our fold, and the
                # claim is decided again against it (never published over it).
                del self.inflight[key]
                log.info("units.transition_conflict", expected=expected)
                return
            self.published += 1
            self.answered.append(report.id)
            log.info("units.transitioned", state=verdict.state, by=verdict.by)
            return
        finding = refusal_finding(project, report, verdict, units, self.actor, event_id)
        self.inflight[key] = report.id
        await self.bus.publish(finding)
        self.published += 1
        self.answered.append(report.id)
        log.info("units.refused", code=verdict.code)

    async def _reconcile_ready(
        self, project: str, units: UnitsState, unit: str, gates_state: gates_fold.GatesState
    ) -> None:
        view = units.units[unit]
        assert view.head is not None
        suite = gates_fold.suite_for(gates_state, view.head)
        if suite is None or suite.unit != unit or suite.reason != "unit":
            return
        key = (project, unit)
        if suite.suite == view.gated_by or key in self.inflight:
            return
        move = gates(view, view.head, suite.outcome == "pass", suite.suite)
        if move is None:
            return
        self.inflight[key] = suite.suite
        published = await publish_move(
            self.bus,
            move,
            project,
            self.actor,
            answer_id(suite.suite, GATES_SALT),
            self.live.expected(project, unit),
        )
        if published is None:
            del self.inflight[key]
            return
        self.published += 1
        log.info("units.ready", unit=unit, ready=move.ready, suite=suite.suite)

    def settle(self, event: Event) -> None:
        """Forget an in-flight marker once the answer it waited for is folded."""
        match event:
            case UnitTransitioned(cause=cause) if cause is not None:
                key = (event.project, event.unit)
            case FindingRaised(cls=cls, unit=unit, evidence=evidence) if (
                cls == REFUSAL_CLASS and unit is not None
            ):
                key, cause = (event.project, unit), evidence.get("report")
            case _:
                return
        if self.inflight.get(key) == cause:
            del self.inflight[key]

    def _references(self, project: str) -> References:
        states = self.live.fold.states(project)
        findings: FindingsState = states["findings"]
        return References.from_states(
            findings, states["gates"], extra_checks=self.checks.for_project(project)
        )


async def run(
    ctx: DaemonContext, *, repo: Path | None = None, subjects: Sequence[str] = ("loop.>",)
) -> None:
    """The daemon body."""
    daemon = UnitsDaemon(ctx.bus, actor=system_actor(ctx.name), checks=declared_checks(repo))
    await daemon.run(ctx, subjects)
