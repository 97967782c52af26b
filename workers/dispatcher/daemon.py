"""The dispatcher: turns plan claims into facts and runs each accepted slice wave by wave.

It folds the ``slices`` projection from the log and, each time it has caught up with the
log, acts on what the fold says:

* answers every plan submission not answered yet: ``SlicePlanAccepted`` (then one
  ``UnitPlanned`` per unit) or a refusal finding listing every problem;
* holds the undispatched dependents of a failed, halted or lost unit, transitively
  (BLOCKED awaiting-dependency naming it, ``by="hold"``), while independent branches drain;
* completes the run-record entry of every unit that reached the TERMINAL barrier;
* dispatches the current group's units in dispatch order up to ``capacity`` running units;
* when every unit of a slice is settled, boots trunk through the gate runner (a signed,
  cached gate result) and closes the slice with that result;
* routes the operator's ``misaligned`` findings from the units their criteria reach, and
  refuses the rest: a finding that is not the operator's, that reaches no unit, or that
  would discard a plan it did not name.

Every refusal the dispatcher raises is the machinery speaking: producer ``standards``,
actor role ``system``, class ``refused-transition``, owned by whoever must act (the
planner for a plan, the operator for a misaligned finding).

Restart safety comes from the log: every answer names what it answers (``cause``,
``evidence.submission``, ``dispatch``) and the fold skips what is answered. Every slice
fact is appended with the slice subject's expected last sequence, so a second dispatcher
working from a stale view is refused by the server instead of dispatching twice; a hold is
appended with the unit subject's expected last sequence, as every unit transition is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog
from loopbus.bus import Bus, Record, TransitionConflict, read
from loopbus.projections import slices
from loopbus.projections.planning import validate
from loopbus.projections.slices import (
    MISALIGNED_EVIDENCE_KEY,
    REFUSAL_EVIDENCE_KEY,
    BlockDependent,
    Close,
    Complete,
    Dispatch,
    Misaligned,
    PlanUnits,
    SlicesState,
    SliceView,
    Submission,
)
from loopbus.schemas import (
    Actor,
    Block,
    Event,
    FindingRaised,
    UnitPlanned,
    UnitTransitioned,
    project_subjects,
    subject_of,
)
from loopbus.schemas.findings import Producer
from loopbus.schemas.slices import (
    BootResult,
    CommandRun,
    MisalignmentRouted,
    NotRun,
    Route,
    RunEntryCompleted,
    SliceClosed,
    SlicePlanAccepted,
    SlicePlanDiscarded,
    UnitDispatched,
)
from loopbus.schemas.targets import PlanTarget, RecordTarget
from loopbus.workers.dispatcher.repo import ProjectRepo, RepoUnreadable
from loopbus.workers.gates.runner import GateRunner
from loopbus.workers.gates.signing import Signer
from loopbus.workers.runtime import Progress, cancel_all

log = structlog.get_logger()

ACTOR = Actor(role="system", principal="dispatcher")
REFUSER: Producer = "standards"
"""The producer of every refusal the dispatcher raises: the machinery's own voice. A
refusal is never labelled as if the operator, a planner or the gate runner had raised it."""
DEFAULT_CAPACITY = 8
PLAN_ROLES = frozenset({"planner", "operator"})
MAX_PASSES = 64  # actions per project per catch-up; each pass publishes at least one fact
ACT_EVERY = 512
"""Once caught up, act at least every this many records even if more are queued, so a
busy log (many projects) cannot starve one project's dispatch."""


class Dispatcher:
    """The dispatching core, separate from the daemon loop so tests can drive it."""

    def __init__(
        self,
        bus: Bus,
        *,
        repos: Mapping[str, ProjectRepo] | None = None,
        signer: Signer | None = None,
        capacity: int = DEFAULT_CAPACITY,
        projects: Sequence[str] = (),
        on_record: Callable[[int], None] | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity={capacity} must be at least 1")
        self.bus = bus
        self.repos = dict(repos or {})
        self.signer = signer
        self.runners: dict[str, GateRunner] = {}
        self.capacity = capacity
        self.projects = tuple(projects)
        self.on_record = on_record
        self.states: dict[str, SlicesState] = {}
        self.subject_seq: dict[str, int] = {}
        self.local: set[str] = set()
        self.dirty: set[str] = set()
        self.booting: dict[tuple[str, str], asyncio.Task[None]] = {}
        self.lock = asyncio.Lock()
        self.progress = Progress()

    async def wait_acted(self, seq: int) -> None:
        """Return once the dispatcher has folded through ``seq`` and acted on it."""
        await self.progress.wait(seq)

    @property
    def acted_seq(self) -> int:
        return self.progress.seq

    # -- folding ------------------------------------------------------------------------

    def subjects(self) -> list[str]:
        return [project_subjects(p) for p in self.projects] or ["loop.>"]

    def state(self, project: str) -> SlicesState:
        found = self.states.get(project)
        if found is None:
            found = self.states[project] = slices.initial()
        return found

    def observe(self, record: Record) -> None:
        """Fold one record (our own facts were folded when we published them)."""
        self.subject_seq[record.subject] = max(self.subject_seq.get(record.subject, 0), record.seq)
        event = record.event
        if event is None:
            return
        if event.id in self.local:
            self.local.discard(event.id)
            return
        slices.apply(self.state(event.project), event)
        self.dirty.add(event.project)

    def _applied(self, event: Event) -> None:
        slices.apply(self.state(event.project), event)
        self.local.add(event.id)
        self.dirty.add(event.project)

    async def _publish_fact(self, event: Event) -> None:
        """Append a slice fact only if the slice subject is where we last saw it."""
        subject = subject_of(event)
        ack = await self.bus.publish_transition(event, self.subject_seq.get(subject, 0))
        self.subject_seq[subject] = ack.seq
        self._applied(event)

    # -- acting -------------------------------------------------------------------------

    async def act(self) -> None:
        """Act on every project whose state changed since the last time."""
        async with self.lock:
            while self.dirty:
                project = min(self.dirty)
                self.dirty.discard(project)
                try:
                    await self._act_on(project)
                except TransitionConflict as exc:
                    # Someone appended first: our view is stale; the records on their way
                    # will make the project dirty again and we re-decide from them.
                    log.info("dispatcher.stale_view", project=project, detail=str(exc))
                except Exception:
                    log.exception("dispatcher.act_failed", project=project)

    async def _act_on(self, project: str) -> None:
        state = self.state(project)
        for submission in slices.pending_submissions(state):
            await self._answer(project, submission)
        for misaligned in slices.open_misaligned(state):
            await self._route(project, misaligned)
        for _ in range(MAX_PASSES):
            actions = [
                a
                for a in slices.next_actions(state, self.capacity)
                if not (isinstance(a, Close) and (project, a.slice) in self.booting)
            ]
            if not actions:
                return
            for action in actions:
                await self._execute(project, state, action)
            self.dirty.discard(project)

    async def _execute(self, project: str, state: SlicesState, action: Any) -> None:
        view = state.slices[action.slice]
        match action:
            case PlanUnits():
                await self._plan_units(project, view, action.units)
            case BlockDependent():
                await self._hold(project, view, action)
            case Complete():
                await self._complete(project, view, action)
            case Dispatch():
                await self._dispatch(project, view, action)
            case Close():
                key = (project, action.slice)
                self.booting[key] = asyncio.create_task(self._boot_and_close(project, view))

    # -- plans --------------------------------------------------------------------------

    async def _answer(self, project: str, submission: Submission) -> None:
        state = self.state(project)
        plan = submission.plan
        problems: list[str] = []
        if submission.role not in PLAN_ROLES:
            problems.append(
                f"submitted by role {submission.role!r}; plans are a planner's (or an "
                "operator's) claim"
            )
        existing = state.slices.get(plan.slice)
        if existing is not None and existing.status != "discarded":
            problems.append(
                f"slice {plan.slice} already has an accepted plan ({existing.accepted}); "
                "plan the next slice under a new id"
            )
        for unit in plan.units:
            owner = state.unit_slice.get(unit.id)
            if owner is not None:
                problems.append(
                    f"unit {unit.id} already belongs to slice {owner}; unit ids are unique "
                    "within a project"
                )
        # The criteria check is never skipped: a check that cannot run refuses the plan.
        pending: list[str] = []
        source = ""
        repo = self.repos.get(project)
        if repo is None:
            problems.append(
                f"pending criteria cannot be read: no repository configured for {project}; "
                "run the dispatcher with --repo"
            )
        else:
            try:
                pending, source = await asyncio.to_thread(repo.pending)
            except RepoUnreadable as exc:
                problems.append(f"pending criteria cannot be read: {exc}")
        # Without the pending criteria the plan is refused above; the rest of the check
        # still runs so the refusal lists every problem at once.
        problems.extend(validate(plan, pending if source else None))
        if problems:
            refusal = FindingRaised(
                project=project,
                actor=ACTOR,
                producer=REFUSER,
                target=PlanTarget(slice=plan.slice),
                severity="high",
                criterion="plan-valid",
                cls="refused-transition",
                message=f"plan for slice {plan.slice} refused: "
                + problems[0]
                + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""),
                evidence={REFUSAL_EVIDENCE_KEY: submission.id, "problems": problems},
                slice=plan.slice,
                owner="planner",
            )
            await self.bus.publish(refusal)
            self._applied(refusal)
            log.info("plan.refused", project=project, slice=plan.slice, problems=problems)
            return
        accepted = SlicePlanAccepted(
            project=project,
            actor=ACTOR,
            plan=plan,
            cause=submission.id,
            pending=pending,
            criteria_source=source,
        )
        await self._publish_fact(accepted)
        log.info("plan.accepted", project=project, slice=plan.slice, units=len(plan.units))

    async def _plan_units(self, project: str, view: SliceView, unit_ids: list[str]) -> None:
        by_id = {unit.id: unit for unit in view.plan.units}
        events = [
            UnitPlanned(
                project=project,
                actor=ACTOR,
                unit=unit_id,
                slice=view.slice,
                title=by_id[unit_id].title,
                files=list(by_id[unit_id].files),
                blocked_by=list(by_id[unit_id].blocked_by),
                criteria=list(by_id[unit_id].criteria),
                design_ref=by_id[unit_id].design_ref,
            )
            for unit_id in unit_ids
        ]
        await self.bus.publish_many(events)
        for event in events:
            self._applied(event)

    # -- the wave executor --------------------------------------------------------------

    async def _hold(self, project: str, view: SliceView, action: BlockDependent) -> None:
        unit = view.units[action.unit]
        failed = view.units[action.failed]
        event = UnitTransitioned(
            project=project,
            actor=ACTOR,
            unit=action.unit,
            state="blocked",
            prior=unit.state,
            block=Block(reason="awaiting-dependency", subject=action.failed),
            cause=failed.last_event,
            by="hold",
        )
        # The expected sequence is the one our fold last saw on the unit's subject (not the
        # server's): a decision taken on a stale view is refused instead of repeated.
        subject = subject_of(event)
        ack = await self.bus.publish_transition(event, self.subject_seq.get(subject, 0))
        self.subject_seq[subject] = ack.seq
        self._applied(event)
        log.info("unit.held", project=project, unit=action.unit, failed=action.failed)

    async def _dispatch(self, project: str, view: SliceView, action: Dispatch) -> None:
        planned = next(u for u in view.plan.units if u.id == action.unit)
        base = None
        repo = self.repos.get(project)
        if repo is not None:
            try:
                base = (await asyncio.to_thread(repo.trunk_commit)).commit
            except RepoUnreadable as exc:
                log.warning("dispatch.no_base", project=project, unit=action.unit, error=str(exc))
        event = UnitDispatched(
            project=project,
            actor=ACTOR,
            slice=view.slice,
            unit=action.unit,
            title=planned.title,
            wave=action.wave,
            sub_wave=action.sub_wave,
            position=action.position,
            attempt=action.attempt,
            files=list(planned.files),
            criteria=list(planned.criteria),
            design_ref=planned.design_ref,
            base=base,
        )
        await self._publish_fact(event)
        log.info(
            "unit.dispatched",
            project=project,
            slice=view.slice,
            unit=action.unit,
            wave=action.wave,
            sub_wave=action.sub_wave,
        )

    async def _complete(self, project: str, view: SliceView, action: Complete) -> None:
        unit = view.units[action.unit]
        state = unit.state
        if state not in ("done", "failed", "lost"):  # pragma: no cover - next_actions guards
            return
        repo = self.repos.get(project)
        commands = list(unit.commands)
        configured: dict[str, str] = {}
        if repo is not None and unit.head is not None:
            configured = await asyncio.to_thread(repo.commands, unit.head)
            commands = [
                CommandRun(
                    check=c.check,
                    command=configured.get(c.check, c.command),
                    outcome=c.outcome,
                    duration_s=c.duration_s,
                    cached=c.cached,
                    tree=c.tree,
                    detail=c.detail,
                )
                for c in commands
            ]
        not_run: list[NotRun] = []
        if unit.head is None:
            not_run.append(
                NotRun(what="gates", why=f"no commit was submitted before the unit ended {state}")
            )
        elif not commands and not unit.suite_errors:
            not_run.append(
                NotRun(
                    what="gates",
                    why=f"no gate suite ran on {unit.head[:12]} before the unit ended {state}",
                )
            )
        for error in unit.suite_errors:
            not_run.append(NotRun(what="gate suite", why=f"could not run: {error}"))
        ran = {c.check for c in commands}
        for check in configured:
            if commands and check not in ran:
                not_run.append(NotRun(what=check, why="in loopbus.toml but in no suite run"))
        if state != "done":
            if unit.reviews == 0:
                not_run.append(
                    NotRun(what="review", why=f"the unit ended {state} before any review")
                )
            not_run.append(NotRun(what="merge", why=f"the unit ended {state}; nothing merged"))
        files: list[str] = []
        if repo is None:
            not_run.append(
                NotRun(what="files changed", why=f"no repository is configured for {project}")
            )
        elif unit.head is None or unit.base is None:
            not_run.append(NotRun(what="files changed", why="no base and head commit to compare"))
        else:
            try:
                files = await asyncio.to_thread(repo.files_changed, unit.base, unit.head)
            except RepoUnreadable as exc:
                not_run.append(NotRun(what="files changed", why=str(exc)))
        event = RunEntryCompleted(
            project=project,
            actor=ACTOR,
            slice=view.slice,
            unit=action.unit,
            dispatch=action.dispatch,
            state=state,
            ended_by=unit.ended_by,
            summary=unit.summary,
            commands=commands,
            files_changed=files,
            not_run=not_run,
            returned_nothing=unit.returned == 0,
            cause=unit.last_event,
        )
        await self._publish_fact(event)

    async def _boot_and_close(self, project: str, view: SliceView) -> None:
        key = (project, view.slice)
        try:
            result = await self._boot(project)
            async with self.lock:
                current = self.state(project).slices.get(view.slice)
                if current is None or current.status != "open":
                    return
                summary = slices.settled_summary(current)
                closed = SliceClosed(
                    project=project,
                    actor=ACTOR,
                    slice=view.slice,
                    boot=result,
                    done=summary["done"],
                    failed=summary["failed"],
                    lost=summary["lost"],
                    blocked=summary["blocked"],
                    cause=max(
                        (u.last_event for u in current.units.values() if u.last_event),
                        default=None,
                    ),
                )
                await self._publish_fact(closed)
                log.info("slice.closed", project=project, slice=view.slice, boot=result.outcome)
        except TransitionConflict as exc:
            log.info("slice.close_conflict", project=project, slice=view.slice, detail=str(exc))
        except Exception:
            log.exception("slice.close_failed", project=project, slice=view.slice)
        finally:
            self.booting.pop(key, None)
        await self.act()

    async def _boot(self, project: str) -> BootResult:
        """The boot check on trunk, run by the gate runner (signed, cached)."""
        repo = self.repos.get(project)
        if repo is None:
            return BootResult(
                outcome="error",
                detail=f"no repository is configured for {project}; nothing to boot",
            )
        runner = self.runners.get(project)
        if runner is None and self.signer is not None:
            runner = self.runners[project] = GateRunner(
                self.bus, repo.path, self.signer, principal=ACTOR.principal, jobs=1, project=project
            )
        return await repo.boot(runner)

    # -- misaligned routing -------------------------------------------------------------

    async def _route(self, project: str, misaligned: Misaligned) -> None:
        state = self.state(project)
        criteria = misaligned.criteria
        if not slices.is_operators(misaligned):
            await self._unroutable(
                project,
                misaligned,
                f"raised by role {misaligned.role!r} as producer {misaligned.producer!r}; only "
                "the operator's misaligned findings (role and producer operator) are routed",
            )
            return
        if not criteria:
            await self._unroutable(
                project,
                misaligned,
                "it names no criteria; raise it again naming the criteria that changed "
                "(--criterion, or --evidence criteria=a,b)",
            )
            return
        named = misaligned.slice
        if named is not None and named not in state.slices:
            await self._unroutable(
                project,
                misaligned,
                f"it names slice {named}, which has no accepted plan; raise it again naming "
                "the slice whose increment you do not recognise",
            )
            return
        reached = slices.units_reached(state, criteria, named)
        if not reached:
            where = f"slice {named}" if named is not None else "any slice"
            await self._unroutable(
                project,
                misaligned,
                f"no unit of {where} claims {', '.join(criteria)}; raise it again naming "
                "criteria the plan's units claim",
            )
            return
        merged = [
            unit_id
            for unit_id in reached
            if (view := slices.view_of(state, unit_id)) is not None
            and view.units[unit_id].state == "done"
        ]
        owners = list(dict.fromkeys(state.unit_slice[unit_id] for unit_id in reached))
        slice_id = named if named is not None else owners[0]
        route: Route = "contract-change" if merged else "re-slice"
        if route == "re-slice" and named is None:
            # A re-slice discards a plan; only a plan the operator named is ever discarded.
            which = (
                f"slice {owners[0]}'s plan"
                if len(owners) == 1
                else f"a plan, and it reaches slices {', '.join(owners)}"
            )
            await self._unroutable(
                project,
                misaligned,
                f"none of the units it reaches ({', '.join(reached)}) has merged: a re-slice "
                f"discards {which}; raise it again naming the slice (--slice {owners[0]})",
            )
            return
        routed = MisalignmentRouted(
            project=project,
            actor=ACTOR,
            slice=slice_id,
            finding=misaligned.finding,
            criteria=criteria,
            reached=reached,
            merged=merged,
            route=route,
            owner="operator" if merged else "planner",
        )
        await self._publish_fact(routed)
        log.info("misaligned.routed", project=project, slice=slice_id, route=route)
        view = state.slices[slice_id]
        if route == "re-slice" and view.status != "discarded":
            discarded = SlicePlanDiscarded(
                project=project,
                actor=ACTOR,
                slice=slice_id,
                why=f"misaligned finding {misaligned.finding}: none of the units its criteria "
                f"reach ({', '.join(reached)}) has merged, so the plan is re-sliced",
                cause=misaligned.finding,
            )
            await self._publish_fact(discarded)

    async def _unroutable(self, project: str, misaligned: Misaligned, why: str) -> None:
        """Refuse to route: the system's finding (never the operator's), for the operator."""
        refusal = FindingRaised(
            project=project,
            actor=ACTOR,
            producer=REFUSER,
            target=RecordTarget(id=misaligned.finding),
            severity="medium",
            criterion="misaligned-route",
            cls="refused-transition",
            message=f"misaligned finding {misaligned.finding} cannot be routed: {why}",
            evidence={MISALIGNED_EVIDENCE_KEY: misaligned.finding},
            slice=misaligned.slice,
            owner="operator",
        )
        await self.bus.publish(refusal)
        self._applied(refusal)
        log.info("misaligned.refused", project=project, finding=misaligned.finding, why=why)

    # -- the loop -----------------------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Fold from sequence 1 and act each time the backlog is drained, until ``stop``."""
        reader = asyncio.create_task(self._follow())
        stopper = asyncio.create_task((stop or asyncio.Event()).wait())
        try:
            done, _ = await asyncio.wait({reader, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if reader in done:
                reader.result()
        finally:
            await cancel_all([reader, stopper, *self.booting.values()])

    async def _follow(self) -> None:
        caught_up = False
        unacted = 0
        async for record in read(self.bus, subjects=self.subjects(), start_seq=1, follow=True):
            structlog.contextvars.bind_contextvars(seq=record.seq, subject=record.subject)
            if self.on_record is not None:
                self.on_record(record.seq)
            try:
                self.observe(record)
            except Exception:
                log.exception("dispatcher.fold_failed")
            unacted += 1
            caught_up = caught_up or record.pending == 0
            if record.pending == 0 or (caught_up and unacted >= ACT_EVERY):
                await self.act()
                await self.progress.mark(record.seq)
                unacted = 0
