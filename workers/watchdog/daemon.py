"""The watchdog: silence becomes LOST, and a wait past its budget becomes a finding.

It folds the units projection from the log, keeps every unit's latest heartbeat from the
heartbeat bucket (its sensor), and decides on a tick:

* a WORKING unit (not blocked, not terminal, not ready) whose last sign of life — its
  holder's latest heartbeat, or its latest transition when that is later — is older than
  the project's lapse is marked LOST. The LOST transition is published with the expected
  last sequence of the unit's subject and an id derived from the unit's last event, so a
  watchdog killed at any point and restarted can neither mark a unit LOST twice nor,
  having refolded the log, miss one.
* a heartbeat from anyone but the unit's holder keeps nothing alive, and each such beater
  is named in one ``forgery`` finding per unit (:mod:`.holders`), not one per beat.
* a BLOCKED unit waiting longer than its reason's budget raises one ``wait-budget``
  finding, owned by whoever owns the blocker (never the waiting unit). The finding names
  the block (the id of the transition that opened it); the units projection records it,
  so it is raised once per block, across restarts too.

:func:`sweep` is pure and takes the time from the world, so tests (and a replay) can
drive it at any instant.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Never

from bus import Bus
from projections import units as units_fold
from projections.claims import lapse
from projections.intents import Publish, Publishing
from projections.units import WAIT_BUDGET_CLASS, UnitsState, UnitView
from schemas import Actor, FindingRaised
from schemas.ids import answer_id
from schemas.targets import BudgetTarget, CheckTarget, RecordTarget, Target
from workers.gates.declared import DeclaredChecks, declared_checks
from workers.kernel import Daemon, Kernel, World
from workers.watchdog.heartbeats import Heartbeats
from workers.watchdog.holders import counted_beat, foreign_beat_findings
from workers.watchdog.limits import Limits

LOST_SALT = "lost"
WAIT_SALT = "wait-budget"


def blocker_owner(view: UnitView, project: str, checks: DeclaredChecks) -> tuple[str, Target]:
    """(owner, target) of the party that owns what ``view`` is blocked on."""
    assert view.block is not None
    reason, subject = view.block.reason, view.block.subject
    if reason == "awaiting-operator":
        return "operator", RecordTarget(id=subject)
    if reason == "awaiting-dependency":
        return f"builder:{subject}", RecordTarget(id=subject)
    if reason == "awaiting-gate":
        return checks.owner(project, subject), CheckTarget(check=subject)
    return "standards", BudgetTarget(budget=subject)


def wait_budget_finding(
    view: UnitView,
    project: str,
    *,
    waited_s: float,
    budget_s: float,
    actor: Actor,
    checks: DeclaredChecks,
) -> FindingRaised:
    """The one finding a block past its budget raises, routed to the blocker's owner."""
    assert view.block is not None and view.block_id is not None
    owner, target = blocker_owner(view, project, checks)
    reason, subject = view.block.reason, view.block.subject
    return FindingRaised(
        id=answer_id(view.block_id, WAIT_SALT),
        project=project,
        actor=actor,
        producer="standards",
        target=target,
        severity="medium",
        criterion=f"wait-budget:{reason}",
        cls=WAIT_BUDGET_CLASS,
        message=(
            f"unit {view.unit} has waited {_human(waited_s)} {reason} on {subject}, past its "
            f"{_human(budget_s)} budget; {owner} owns what it waits on"
        ),
        evidence={
            "block": view.block_id,
            "reason": reason,
            "subject": subject,
            "waited_s": round(waited_s, 3),
            "budget_s": budget_s,
            "since": view.blocked_since.isoformat() if view.blocked_since else None,
        },
        unit=view.unit,
        slice=view.slice or None,
        owner=owner,
    )


def sweep(
    world: World, limits: Limits, checks: DeclaredChecks, heartbeats: Heartbeats | None
) -> list[Publishing]:
    """Pure: LOST for every lapsed working unit, a finding for every wait past its budget
    and for every beater that does not hold the unit it beats for, as of ``world.now``."""
    intents: list[Publishing] = []
    units: UnitsState = world.state("units")
    for view in units.units.values():
        beats = heartbeats.beaters(world.project, view.unit) if heartbeats else {}
        for foreign in foreign_beat_findings(view, beats, world.project, world.actor):
            intents.append(Publish(foreign))
        if view.state == "working" and view.last_event is not None:
            beat = counted_beat(view, beats)
            move = lapse(view, beat, limits.lapse_for(world.project), world.now)
            if move is not None:
                intents.append(world.move(move, answer_id(view.last_event, LOST_SALT)))
        elif view.state == "blocked" and view.block is not None and view.block_id is not None:
            if view.wait_finding is not None:
                continue  # raised once per block, and the projection remembers it
            budget_s = limits.budget_for(view.block.reason)
            waited_s = units_fold.waited(view, world.now)
            if waited_s > budget_s:
                finding = wait_budget_finding(
                    view,
                    world.project,
                    waited_s=waited_s,
                    budget_s=budget_s,
                    actor=world.actor,
                    checks=checks,
                )
                intents.append(Publish(finding))
    return intents


class Watchdog(Daemon[Never]):
    """Sweeps on a tick; heartbeats come from the heartbeat bucket (a sensor)."""

    name = "watchdog"
    folds = (units_fold.FOLD,)

    def __init__(
        self,
        bus: Bus,
        limits: Limits | None = None,
        *,
        actor: Actor | None = None,
        checks: DeclaredChecks | None = None,
        projects: Sequence[str] = (),
    ):
        super().__init__(projects=projects, actor=actor)
        self.limits = limits or Limits()
        self.checks = checks or DeclaredChecks()
        self.heartbeats = Heartbeats(bus, self.projects)
        self.tick_s = tick_for(self.limits)

    async def start(self, kernel: Kernel[Never]) -> None:
        # Every heartbeat is loaded before the first sweep; a feed that dies stops the
        # daemon (to be restarted), because sweeping on a dead feed marks live units LOST.
        await self.heartbeats.load()
        for index in range(self.heartbeats.feeds):
            kernel.spawn(self.heartbeats.follow(index), f"heartbeats-{index}")

    def decide(self, world: World) -> Sequence[Publishing]:
        return sweep(world, self.limits, self.checks, self.heartbeats)


def _human(seconds: float) -> str:
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def tick_for(limits: Limits) -> float:
    """How often to sweep: a quarter of the shortest limit, between 50 ms and 5 s."""
    return min(max(limits.shortest() / 4, 0.05), 5.0)


def make_watchdog(
    bus: Bus, limits: Limits, *, repo: Path | None = None, projects: Sequence[str] = ()
) -> Watchdog:
    """The daemon as ``python -m workers.watchdog`` runs it."""
    return Watchdog(bus, limits, checks=declared_checks(repo), projects=projects)
