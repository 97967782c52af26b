"""The kernel's hands: carrying a decision's intents out, and running its effects.

Split from :mod:`.kernel` (the loop that follows, folds and decides) along the seam the
loop already had: everything here starts from a list of intents. :class:`Carrying` is
the half of :class:`~workers.kernel.kernel.Kernel` that publishes (in order,
stopping at the first publish that fails or loses a race), sets the barrier that makes
the next decision wait for its own events, and runs effects once per key.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from typing import Generic, assert_never

import structlog

from bus import Ack, Bus, BusError, TransitionConflict
from projections.claims import transition_event
from projections.intents import (
    E,
    Effect,
    IntentOf,
    MoveUnit,
    Publish,
    PublishBatch,
    PublishIf,
    Publishing,
)
from schemas import Actor, Event, subject_of
from schemas.subjects import matches_any
from workers.kernel.daemon import Daemon

log = structlog.get_logger()

RETRY_FIRST_S = 0.2
RETRY_MAX_S = 5.0


async def publish_intent(
    bus: Bus, intent: Publishing, actor: Actor | None
) -> list[tuple[Event, Ack]]:
    """Append what one intent says, and where each event was stored: the one code path by
    which an intent reaches the log, a daemon's kernel's and the one-shot's
    (:func:`workers.kernel.oneshot.carry_out`) alike. ``actor``: who a unit move is by
    (a ``TypeError`` without one: a transition names who made it)."""
    match intent:
        case Publish(event=event):
            return [(event, await bus.publish(event))]
        case PublishBatch(events=batch):
            if len(batch) == 1:
                return [(batch[0], await bus.publish(batch[0]))]
            acks = await bus.publish_atomic(list(batch))
            return list(zip(batch, acks, strict=True))
        case PublishIf(event=event, expected=expected):
            return [(event, await bus.publish_transition(event, expected))]
        case MoveUnit(project=project, move=move, event_id=event_id, expected=expected):
            if actor is None:
                raise TypeError(f"moving unit {move.unit} needs the actor it is made by")
            fact = transition_event(move, project, actor, event_id)
            return [(fact, await bus.publish_transition(fact, expected))]
        case _:
            assert_never(intent)


class Carrying(Generic[E]):
    """Publishing intents and running effects, for :class:`.kernel.Kernel` (whose
    ``__init__`` sets every attribute declared here); ``E``: the daemon's effects."""

    bus: Bus
    daemon: Daemon[E]
    subjects: list[str]
    seqs: dict[str, int]
    folded: int
    dirty: set[str]
    barrier: dict[str, int]
    repeated: int
    running: dict[str, asyncio.Task[None]]
    failed: set[str]
    idle: dict[str, tuple[int, E]]
    results: deque[tuple[str, Sequence[IntentOf[E]]]]
    records: deque[Event]
    published: int
    wake: asyncio.Event
    _retry_s: float
    _retry_at: float | None

    async def _record_once(self) -> None:
        """Publish the pending records, each once: an occupied subject means another daemon
        (or this one, before a restart) already stored it."""
        while self.records and self._retry_at is None:
            event = self.records[0]
            try:
                ack = await self.bus.publish_transition(event, 0)
            except TransitionConflict:
                pass
            except BusError as exc:
                log.warning("daemon.record_failed", project=event.project, error=str(exc))
                self._retry(event.project)
                return
            else:
                self._published(event, ack.seq, ack.duplicate)
            self.records.popleft()

    # -- carrying intents out -----------------------------------------------------------

    async def _carry_out(self, project: str, intents: Sequence[IntentOf[E]]) -> list[Event]:
        """Publish in order; stop at the first publish that fails or loses a race."""
        published, _rest = await self._carry_out_rest(project, intents)
        return published

    async def _carry_out_rest(
        self, project: str, intents: Sequence[IntentOf[E]]
    ) -> tuple[list[Event], Sequence[IntentOf[E]]]:
        """Like :meth:`_carry_out`; also returns what a failed publish left undone."""
        published: list[Event] = []
        for index, intent in enumerate(intents):
            try:
                published.extend(await self._one(intent))
            except TransitionConflict as exc:
                log.info("daemon.lost_race", project=project, subject=exc.subject)
                self._wait_for_more(project, exc)
                return published, ()
            except BusError as exc:
                log.warning("daemon.publish_failed", project=project, error=str(exc))
                self._retry(project)
                return published, intents[index:]
            except Exception:
                log.exception("daemon.intent_failed", project=project, intent=type(intent).__name__)
        self._retry_s = 0.0
        return published, ()

    async def _one(self, intent: IntentOf[E]) -> list[Event]:
        if isinstance(intent, Effect):
            self._start(intent)
            return []
        stored = await publish_intent(self.bus, intent, self.daemon.actor)
        for event, ack in stored:
            self._published(event, ack.seq, ack.duplicate)
        return [event for event, _ack in stored]

    def _published(self, event: Event, seq: int, duplicate: bool = False) -> None:
        """Decide for this project again only once the event is folded back (when we follow
        its subject; a publication elsewhere never comes back to us)."""
        self.published += 1
        if matches_any(self.subjects, subject_of(event)):
            if seq <= self.folded:
                # Folded already: a copy of an event on the log (acked as a duplicate), or
                # the reader got there before the ack. Its fold marked the project if it
                # changed anything; marking it again would only decide the same thing again
                # on the same state, once per record, for ever.
                if duplicate:
                    # Another replica answered first, or the decision does not see its own
                    # answer (a fold that does not count it): worth a line either way.
                    self.repeated += 1
                    log.info(
                        "daemon.answer_already_folded",
                        project=event.project,
                        kind=event.kind,
                        id=event.id,
                        seq=seq,
                    )
                return
            self.barrier[event.project] = max(self.barrier.get(event.project, 0), seq)
        self.dirty.add(event.project)

    def _wait_for_more(self, project: str, conflict: TransitionConflict) -> None:
        """Decide again once the winner's event is folded: at once when the reader has
        already folded a record on that subject past the sequence the decision expected
        (the race was lost while the intents were being carried out), else after the
        next record."""
        self.dirty.add(project)
        if self.seqs.get(conflict.subject, 0) > conflict.expected:
            self.wake.set()
            return
        self.barrier[project] = max(self.barrier.get(project, 0), self.folded + 1)

    def _retry(self, project: str) -> None:
        self.dirty.add(project)
        self._retry_s = min(max(self._retry_s * 2, RETRY_FIRST_S), RETRY_MAX_S)
        self._retry_at = asyncio.get_running_loop().time() + self._retry_s

    # -- effects --------------------------------------------------------------------------

    def _start(self, effect: E) -> None:
        if effect.key in self.running or effect.key in self.failed:
            return
        if self.idle.get(effect.key) == (self.folded, effect):
            return
        task = asyncio.create_task(self._perform(effect), name=f"effect:{effect.key}")
        self.running[effect.key] = task

    async def _perform(self, effect: E) -> None:
        intents: Sequence[IntentOf[E]] = ()
        try:
            intents = await self.daemon.perform(effect)
        except asyncio.CancelledError:
            raise
        except BusError as exc:  # transient: asked for again after the back-off
            log.warning("daemon.effect_publish_failed", key=effect.key, error=str(exc))
            self._retry(effect.project)
        except Exception:
            self.failed.add(effect.key)
            log.exception("daemon.effect_failed", key=effect.key, action=effect.action)
        finally:
            self.running.pop(effect.key, None)
            self.dirty.add(effect.project)  # decide again: the effect is over
            self.wake.set()
        if intents:
            self.idle.pop(effect.key, None)
            self.results.append((effect.project, intents))
        else:
            self.idle[effect.key] = (self.folded, effect)
