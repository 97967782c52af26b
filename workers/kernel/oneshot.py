"""Publishing outside a daemon's loop, by the kernel's rules: one system transition (read
the unit, decide, publish once), or the batches a library returned.

For commands and tests that stand in for a daemon (an operator's halt, a merger in a
test): the same rules as the kernel — the transition is built by
:func:`projections.claims.transition_event` and published conditionally on the
unit subject's sequence as it was read, and a lost race is read and decided again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bus import Bus, TransitionConflict, read
from projections.claims import Refusal, Verdict, transition_event
from projections.units import UnitsState, UnitView
from projections.units import apply as units_apply
from projections.units import initial as units_initial
from schemas import Actor, Event, UnitTransitioned
from schemas.ids import answer_id, new_id
from schemas.subjects import unit_subject, unit_subjects


async def read_units(bus: Bus, project: str) -> tuple[UnitsState, dict[str, int]]:
    """Every unit's state from the project's unit subjects, and each subject's last seq."""
    state = units_initial()
    seqs: dict[str, int] = {}
    async for record in read(bus, subjects=[unit_subjects(project)]):
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
    """Apply a system decision (one of :mod:`projections.claims`' functions) to one
    unit. The event id derives from the move's ``cause`` and ``salt``, so repeating the
    call after a crash stores nothing twice. Raises ``LookupError`` for an unknown unit and
    ``TransitionConflict`` when ``attempts`` races were all lost."""
    for _ in range(attempts):
        state, seqs = await read_units(bus, project)
        view = state.units.get(unit)
        if view is None:
            raise LookupError(f"unit {unit} is not planned in project {project}")
        verdict = decide(state, view)
        if isinstance(verdict, Refusal):
            return verdict
        seed = verdict.cause or view.last_event
        event = transition_event(
            verdict, project, actor, answer_id(seed, salt) if seed else new_id()
        )
        try:
            await bus.publish_transition(event, seqs.get(unit_subject(project, unit), 0))
        except TransitionConflict:
            continue
        return event
    raise TransitionConflict(unit_subject(project, unit), -1)


async def publish_batches(bus: Bus, batches: Sequence[Sequence[Event]]) -> list[int]:
    """Publish ``batches`` in order, each atomically (a reader sees all of it or none), for
    a caller outside a daemon's loop (a command, a library run by one); returns the stream
    sequence of each batch's last event. A daemon returns the same batches as intents
    (``PublishBatch``) and its kernel publishes them."""
    seqs: list[int] = []
    for batch in batches:
        if not batch:
            continue
        if len(batch) == 1:
            acks = [await bus.publish(batch[0])]
        else:
            acks = await bus.publish_atomic(list(batch))
        seqs.append(acks[-1].seq)
    return seqs


async def publish_first(bus: Bus, event: Event) -> bool:
    """Publish ``event`` only while its subject is empty (the first of racing callers wins,
    as a daemon's ``PublishIf(event, 0)``); False when the subject already held one."""
    try:
        await bus.publish_transition(event, 0)
    except TransitionConflict:
        return False
    return True
