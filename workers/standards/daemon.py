"""The standards daemon: watches the machinery budget of every slice and raises breaches.

It folds the ``budgets`` projection and, each time it has caught up with the log, raises
one ``budget-breach`` finding (producer ``standards``, owner ``standards``) for each
(slice, budget) crossed and not raised yet. The finding never belongs to the unit that
happened to trip the budget: when a gate suite outgrows its budget, the gate
configuration is what is wrong.

Once is derived from the log: the projection records every standards breach finding, so a
restarted daemon raises nothing twice; and each finding is appended with the expected last
sequence of ``finding.standards``, so two daemons from the same view cannot both raise it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import structlog
from loopbus.bus import Bus, Record, TransitionConflict, read
from loopbus.projections import budgets
from loopbus.projections.budgets import Breach, BudgetsState
from loopbus.schemas import Actor, FindingRaised, project_subjects, subject_of
from loopbus.schemas.targets import BudgetTarget
from loopbus.workers.runtime import Progress, cancel_all

log = structlog.get_logger()

ACTOR = Actor(role="system", principal="standards")
ACT_EVERY = 512

_UNITS = {
    "gate_wall_clock": "s",
    "wait": "s",
    "tokens_per_unit": " tokens",
    "rework_rounds": " rounds",
    "cache_hit_rate": "",
}


def breach_finding(project: str, breach: Breach) -> FindingRaised:
    """The finding for one breach: about the budget, owned by the standards role."""
    unit = _UNITS.get(breach.budget, "")
    floor = breach.budget == "cache_hit_rate"
    relation = "below its floor" if floor else "over its ceiling"
    return FindingRaised(
        project=project,
        actor=ACTOR,
        producer="standards",
        target=BudgetTarget(budget=breach.budget),
        severity="medium",
        criterion=f"{breach.slice}:{breach.budget}",
        cls="budget-breach",
        message=(
            f"slice {breach.slice}: {breach.budget} {breach.value:.4g}{unit} is {relation} "
            f"{breach.limit:.4g}{unit} ({breach.detail}); the machinery is what is wrong, "
            "not the unit that tripped it"
        ),
        evidence={
            "slice": breach.slice,
            "budget": breach.budget,
            "value": breach.value,
            "limit": breach.limit,
            "detail": breach.detail,
        },
        slice=breach.slice,
        owner="standards",
    )


class Standards:
    """The breach-raising core; ``run`` follows the log until stopped."""

    def __init__(self, bus: Bus, *, projects: Sequence[str] = ()) -> None:
        self.bus = bus
        self.projects = tuple(projects)
        self.states: dict[str, BudgetsState] = {}
        self.subject_seq: dict[str, int] = {}
        self.local: set[str] = set()
        self.dirty: set[str] = set()
        self.progress = Progress()

    async def wait_acted(self, seq: int) -> None:
        """Return once the daemon has folded through ``seq`` and acted on it."""
        await self.progress.wait(seq)

    @property
    def acted_seq(self) -> int:
        return self.progress.seq

    def observe(self, record: Record) -> None:
        self.subject_seq[record.subject] = max(self.subject_seq.get(record.subject, 0), record.seq)
        event = record.event
        if event is None:
            return
        if event.id in self.local:
            self.local.discard(event.id)
            return
        state = self.states.setdefault(event.project, budgets.initial())
        budgets.apply(state, event)
        self.dirty.add(event.project)

    async def act(self) -> None:
        for project in sorted(self.dirty):
            self.dirty.discard(project)
            for breach in budgets.breaches(self.states[project]):
                finding = breach_finding(project, breach)
                subject = subject_of(finding)
                try:
                    ack = await self.bus.publish_transition(
                        finding, self.subject_seq.get(subject, 0)
                    )
                except TransitionConflict:
                    log.info("standards.stale_view", project=project, slice=breach.slice)
                    break  # the record that beat us is on its way; decide again after it
                except Exception:
                    log.exception("standards.publish_failed", project=project)
                    break
                self.subject_seq[subject] = ack.seq
                budgets.apply(self.states[project], finding)
                self.local.add(finding.id)
                log.info(
                    "budget.breach",
                    project=project,
                    slice=breach.slice,
                    budget=breach.budget,
                    value=breach.value,
                    limit=breach.limit,
                )

    async def run(self, stop: asyncio.Event | None = None) -> None:
        subjects = [project_subjects(p) for p in self.projects] or ["loop.>"]

        async def follow() -> None:
            caught_up = False
            unacted = 0
            async for record in read(self.bus, subjects=subjects, start_seq=1, follow=True):
                try:
                    self.observe(record)
                except Exception:
                    log.exception("standards.fold_failed", seq=record.seq)
                unacted += 1
                caught_up = caught_up or record.pending == 0
                # Act when the backlog is drained; once caught up, also every ACT_EVERY
                # records, so a busy log cannot postpone a breach for ever.
                if record.pending == 0 or (caught_up and unacted >= ACT_EVERY):
                    await self.act()
                    await self.progress.mark(record.seq)
                    unacted = 0

        reader = asyncio.create_task(follow())
        stopper = asyncio.create_task((stop or asyncio.Event()).wait())
        try:
            done, _ = await asyncio.wait({reader, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if reader in done:
                reader.result()
        finally:
            await cancel_all([reader, stopper])
