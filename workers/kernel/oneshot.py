"""Publishing outside a daemon's loop, by the kernel's rules: one system transition (read
the unit, decide, publish once), or the intents a library returned (:func:`carry_out`).

For commands and tests that stand in for a daemon (an operator's halt, a merger in a
test): the same rules as the kernel — the transition is built by
:func:`projections.claims.transition_event` and published conditionally on the
unit subject's sequence as it was read, and a lost race is read and decided again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bus import Bus, TransitionConflict, read
from projections.claims import Refusal, Verdict, transition_event
from projections.intents import Effect, Intent
from projections.units import UnitsState, UnitView
from projections.units import apply as units_apply
from projections.units import initial as units_initial
from schemas import Actor, UnitTransitioned
from schemas.ids import answer_id, new_id
from schemas.subjects import unit_subject, unit_subjects
from workers.kernel.carry import publish_intent


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


async def carry_out(
    bus: Bus, intents: Sequence[Intent], *, actor: Actor | None = None
) -> dict[str, int]:
    """Carry ``intents`` out in order as a daemon's kernel does, through the kernel's own
    :func:`~workers.kernel.carry.publish_intent`, for a caller outside any daemon's loop (a
    command, ``loopbus up``, the integrity watcher): a library returns the same intents to
    either. Returns where each stored event is, by event id.

    Stops at the first intent that fails, as the kernel does, raising what it raised
    (:class:`~bus.TransitionConflict` for a ``PublishIf`` or ``MoveUnit`` whose subject
    moved, :class:`~bus.BusError`) with everything before it stored, so a fact never
    reaches the log ahead of one it was listed after. An effect is refused (``TypeError``):
    there is no shell here to perform it; so is a unit move without ``actor``."""
    stored: dict[str, int] = {}
    for intent in intents:
        if isinstance(intent, Effect):
            raise TypeError(f"{intent.action}: an effect needs a daemon's shell to perform it")
        for event, ack in await publish_intent(bus, intent, actor):
            stored[event.id] = ack.seq
    return stored
