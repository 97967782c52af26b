"""(Being retired: only the merger still uses this; the kernel replaces it.) What the units
daemon and the watchdog shared: a live fold that also knows, for every unit,
the stream sequence of the last message on its subject, and how a :class:`Move` becomes a
conditional publish.

Why the sequence lives next to the fold: a transition is published with the expected last
sequence of the unit's subject, and that expectation must be the sequence *of the state
the decision was made on*. Asking the server for the subject's current sequence instead
would let a daemon that has not folded a newer transition overwrite it.

Every answer has an id derived from what it answers (:func:`answer_id`): a report's id
for the units daemon, the unit's last event for the watchdog, a block for a wait-budget
finding. Two daemons racing, or one restarted after publishing but before folding its
own answer, therefore publish the *same* id, and the log's Msg-Id de-duplication keeps one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from loopbus.bus import Bus, Record, TransitionConflict
from loopbus.projections import FOLDS, Fold
from loopbus.projections.claims import Move, transition_event
from loopbus.projections.units import UnitsState
from loopbus.schemas import Actor, UnitPlanned, UnitTransitioned
from loopbus.schemas.ids import answer_id
from loopbus.schemas.subjects import PREFIX as SUBJECT_PREFIX
from loopbus.workers.runtime import LiveFold, raise_if_cancelled

__all__ = ["answer_id", "raise_if_cancelled"]


def unit_subject(project: str, unit: str) -> str:
    return f"{SUBJECT_PREFIX}.{project}.unit.{unit}"


class UnitsLive:
    """Per-project folds plus the last sequence seen on each unit subject."""

    def __init__(self, folds: Sequence[Fold[Any]] = FOLDS):
        self.fold = LiveFold(folds)
        self.subject_seq: dict[str, int] = {}
        self.last_seq = 0
        self._changed = asyncio.Condition()

    def apply(self, record: Record) -> None:
        if record.event is None:
            return
        self.fold.apply(record.event)
        if isinstance(record.event, UnitPlanned | UnitTransitioned):
            self.subject_seq[record.subject] = record.seq
        self.last_seq = record.seq

    def units(self, project: str) -> UnitsState:
        state: UnitsState = self.fold.states(project)["units"]
        return state

    def expected(self, project: str, unit: str) -> int:
        """The unit subject's last sequence as this fold knows it (0: nothing there)."""
        return self.subject_seq.get(unit_subject(project, unit), 0)

    async def notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def until(self, predicate: Callable[[], bool], timeout: float) -> None:
        """Wait until ``predicate()`` holds after some record or update (``TimeoutError``)."""
        async with asyncio.timeout(timeout):
            async with self._changed:
                await self._changed.wait_for(predicate)


async def publish_move(
    bus: Bus, move: Move, project: str, actor: Actor, event_id: str, expected: int
) -> UnitTransitioned | None:
    """Publish ``move`` if the unit's subject is still at ``expected``; ``None`` when another
    writer moved the unit first (the caller re-reads and re-decides)."""
    event = transition_event(move, project, actor, event_id)
    try:
        await bus.publish_transition(event, expected)
    except TransitionConflict:
        return None
    return event
