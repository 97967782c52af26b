"""What a daemon is to the kernel: its folds, its subjects, a pure decision and a shell.

Subclass :class:`Daemon`, set ``name`` and ``folds``, and write ``decide``. The kernel
hands ``decide`` a :class:`World` — one project's folded states, the last sequence of
every subject it follows, the time, and what the shell observed — and carries out the
intents it returns. ``decide`` must not do I/O, read the clock or keep state of its own
between calls: everything it needs is in the world, so the same decision can be tested
on a list of events and audited by replaying the log.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic

from bus import Record
from projections import Fold, FoldFailure, apply_guarded
from projections.claims import Move
from projections.intents import E, IntentOf, MoveUnit, PublishIf
from schemas import Actor, Event, subject_of
from schemas.subjects import serving, unit_subject

if TYPE_CHECKING:
    from workers.kernel.kernel import Kernel


def system_actor(name: str) -> Actor:
    """The actor a daemon instance publishes facts as: role ``system``, named per process."""
    return Actor(role="system", principal=f"{name}@{socket.gethostname()}:{os.getpid()}")


@dataclass(frozen=True)
class World:
    """What one decision sees: one project's states and everything else it may depend on."""

    project: str
    states: Mapping[str, Any]
    """Fold name -> that fold's state for this project (read only)."""
    seqs: Mapping[str, int]
    """Subject -> the last stream sequence folded on it (0: nothing yet)."""
    now: datetime
    actor: Actor
    """Who the daemon publishes as (role ``system``)."""
    outside: Mapping[str, Any]
    """What the daemon's shell observed outside the log (a ref, heartbeats), by name."""
    folded: int = 0
    """The last stream sequence folded (of any subject this daemon follows)."""
    running: frozenset[str] = frozenset()
    """Keys of the effects in flight."""
    failed: frozenset[str] = frozenset()
    """Keys of the effects that raised in this process (they are not run again)."""

    def state(self, name: str) -> Any:
        return self.states[name]

    def expected(self, event: Event) -> int:
        """The last sequence of ``event``'s subject as this daemon has folded it."""
        return self.seqs.get(subject_of(event), 0)

    def unit_seq(self, unit: str) -> int:
        return self.seqs.get(unit_subject(self.project, unit), 0)

    def publish_if(self, event: Event) -> PublishIf:
        """Publish ``event`` only if its subject has not moved since this view."""
        return PublishIf(event, self.expected(event))

    def move(self, move: Move, event_id: str) -> MoveUnit:
        """Move a unit, conditionally on the unit subject as this view knows it."""
        return MoveUnit(self.project, move, event_id, self.unit_seq(move.unit))


class Daemon(Generic[E]):
    """A daemon's policy (``decide``) and shell (``perform``, ``start``, ``close``).

    ``E`` is the union of the effects it asks for (``typing.Never``: none), declared in
    its ``effects.py``; ``decide`` and ``perform`` return ``IntentOf[E]``, so mypy rejects
    a decision that asks for another daemon's effect and a ``perform`` that misses one
    (tests/architecture/test_effect_types.py holds both)."""

    name: ClassVar[str] = "daemon"
    folds: tuple[Fold[Any], ...] = ()
    tick_s: float | None = None
    """Decide for every project at least this often (for decisions that depend on time)."""
    acts_during_replay: ClassVar[bool] = False
    """Decide while the log's history is still being folded (the projector flushes its
    views as it goes); every other daemon decides only once it has caught up."""
    shares_projects: ClassVar[bool] = True
    """Replicas of this daemon split the projects, each acting on the ones it holds (when
    run with a project lease, ``--project-lease``). False for a daemon whose replicas all
    run everywhere: a pure reader, or one whose replicas split work items by leases."""

    def __init__(self, *, projects: Sequence[str] = (), actor: Actor | None = None) -> None:
        self.projects = tuple(projects)
        self.actor = actor or system_actor(self.name)

    def subjects(self) -> list[str]:
        """What the kernel follows (every subject of the served projects)."""
        return serving(self.projects)

    def fold(self, states: dict[str, Any], record: Record) -> Sequence[FoldFailure]:
        """Fold one decoded record into its project's states (every fold of ``folds``).

        A fold that raises skips the record and carries on (the same rule ``replay``
        follows); what failed is returned, and the kernel records it on the log."""
        assert record.event is not None
        failures: list[FoldFailure] = []
        for fold in self.folds:
            states[fold.name], failure = apply_guarded(fold, states[fold.name], record.event)
            if failure is not None:
                failures.append(failure)
        return failures

    def repo_for(self, project: str) -> Path | None:
        """The repository this daemon reads for ``project`` (``None``: none). When it is a
        mirror of a URL, the kernel fetches it before folding an event that names a commit
        the mirror lacks (:mod:`workers.ref_fetch`)."""
        return None

    def also_folds_into(self, event: Event) -> Sequence[str]:
        """Other projects whose states ``event`` is folded into as well (and decided for
        again): for a catalogue-wide count, such as the slices across every project that
        declared a capability. None by default."""
        return ()

    def undecodable(self, record: Record) -> Sequence[IntentOf[E]]:
        """What a record that does not decode warrants (nothing: the projector quarantines
        it, every other daemon skips it)."""
        return ()

    def decide(self, world: World) -> Sequence[IntentOf[E]]:
        """Pure: the intents the world warrants for ``world.project`` (none by default)."""
        return ()

    async def perform(self, effect: E) -> Sequence[IntentOf[E]]:
        """Carry out an effect ``decide`` asked for; return the intents its result warrants
        (what it would publish: the kernel publishes it, as it publishes a decision's).

        A daemon that asks for effects declares them as tagged subclasses of
        :class:`~projections.intents.Effect`, subclasses ``Daemon[ThatUnion]``, and writes
        this as one ``match`` ending in ``case _: assert_never(effect)``: a case missed is
        then a mypy error."""
        raise NotImplementedError(f"{type(self).__name__} asked for effect {effect!r}")

    async def start(self, kernel: Kernel[E]) -> None:
        """Start the shell's sensors (with ``kernel.spawn``) before the log is followed."""

    async def close(self) -> None:
        """Release what the shell holds (called once, when the kernel stops)."""
