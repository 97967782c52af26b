"""What the units daemon and the watchdog share: a live fold that also knows, for every unit,
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
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from loopbus.bus import Bus, Record, TransitionConflict, read
from loopbus.projections import FOLDS, Fold
from loopbus.projections.claims import Move, Refusal, Verdict
from loopbus.projections.units import UnitsState, UnitView
from loopbus.projections.units import apply as units_apply
from loopbus.projections.units import initial as units_initial
from loopbus.schemas import Actor, UnitPlanned, UnitTransitioned
from loopbus.schemas.events import SUBJECT_PREFIX
from loopbus.schemas.ids import id_time, new_id
from loopbus.workers.runtime import LiveFold

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def answer_id(seed: str, salt: str) -> str:
    """A ULID fixed by ``seed`` (a ULID) and ``salt``: its time part is the seed's, its
    random part a digest of both. The same question always gets the same answer id."""
    ms = int(id_time(seed).timestamp() * 1000)
    digest = int.from_bytes(hashlib.sha256(f"{seed}|{salt}".encode()).digest()[:10], "big")
    value = (ms << 80) | digest
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def raise_if_cancelled() -> None:
    """Re-raise a cancellation that an await swallowed.

    Python 3.11's ``asyncio.wait_for`` returns the result instead of raising when the
    cancellation arrives as the awaited future completes (gh-86296), and nats-py waits for
    every publish acknowledgement with it: a daemon cancelled while publishing would carry
    on reading for ever. The task still counts the request (``cancelling()``), so the
    loops check it after each step.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def unit_subject(project: str, unit: str) -> str:
    return f"{SUBJECT_PREFIX}.{project}.unit.{unit}"


def transition_event(move: Move, project: str, actor: Actor, event_id: str) -> UnitTransitioned:
    """The fact a :class:`Move` stands for."""
    return UnitTransitioned(
        id=event_id,
        project=project,
        actor=actor,
        unit=move.unit,
        state=move.state,
        prior=move.prior,
        ready=move.ready,
        block=move.block,
        outcome=move.outcome,
        cause=move.cause,
        by=move.by,
        commit=move.commit,
    )


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


async def read_units(bus: Bus, project: str) -> tuple[UnitsState, dict[str, int]]:
    """Fold only the project's unit subjects (plans and transitions): every unit's state and
    its subject's last sequence, for a daemon that does not keep the units fold itself."""
    state = units_initial()
    seqs: dict[str, int] = {}
    async for record in read(bus, subjects=[f"{SUBJECT_PREFIX}.{project}.unit.*"]):
        if record.event is not None:
            state = units_apply(state, record.event)
            seqs[record.subject] = record.seq
    return state, seqs


async def transition_unit(
    bus: Bus,
    project: str,
    unit: str,
    decide: Callable[[UnitsState, UnitView], Verdict],
    *,
    actor: Actor,
    salt: str,
    attempts: int = 5,
) -> UnitTransitioned | Refusal:
    """Apply a system decision to one unit with optimistic concurrency.

    For the daemons that establish the other facts (dispatcher holds, merger, convergence):
    read the unit, ``decide`` (one of :mod:`loopbus.projections.claims`' system functions), publish
    conditionally on the unit subject's sequence, and on a conflict read again and decide
    again. The event id derives from the move's ``cause`` and ``salt``, so repeating the
    same call after a crash stores nothing twice. Raises ``LookupError`` for an unknown
    unit and ``TransitionConflict`` when ``attempts`` races were all lost.
    """
    for _ in range(attempts):
        state, seqs = await read_units(bus, project)
        view = state.units.get(unit)
        if view is None:
            raise LookupError(f"unit {unit} is not planned in project {project}")
        verdict = decide(state, view)
        if isinstance(verdict, Refusal):
            return verdict
        seed = verdict.cause or view.last_event
        event_id = answer_id(seed, salt) if seed else new_id()
        expected = seqs.get(unit_subject(project, unit), 0)
        published = await publish_move(bus, verdict, project, actor, event_id, expected)
        if published is not None:
            return published
    raise TransitionConflict(unit_subject(project, unit), -1)
