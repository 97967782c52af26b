"""What a daemon's decision asks for: intents, plain data carried out by the daemon kernel.

A daemon's ``decide`` is pure: it reads folded state and returns a list of intents. The
kernel (:mod:`workers.kernel`) carries each one out:

* :class:`Publish` appends one event (the event id is its ``Nats-Msg-Id``, so a repeat is
  stored once);
* :class:`PublishBatch` appends several events as one atomic batch (all or none);
* :class:`PublishIf` appends an event only if its subject's last sequence is still
  ``expected`` — the sequence the decision was made on — so two daemons deciding from the
  same view cannot both win;
* :class:`MoveUnit` moves a unit: the kernel builds the transition with
  :func:`projections.claims.transition_event` (the one function that builds unit
  transitions) and appends it conditionally on the unit subject's sequence;
* an :class:`Effect` (a daemon's own tagged subclass of it) asks the daemon's shell for
  work that is not publishing (run a check, an agent command, a git operation). The shell
  answers with more intents: what it would publish goes back through the kernel.

Intents are data so that a decision can be tested without a server and replayed.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import TypeAlias, TypeVar

import msgspec

from projections.claims import Move
from schemas import Event, UnitTransitioned
from schemas.leases import Work


def _not_a_transition(events: tuple[Event, ...]) -> None:
    for event in events:
        if isinstance(event, UnitTransitioned):
            raise TypeError(
                "a unit transition is published only through MoveUnit, which builds it with "
                "projections.claims.transition_event and checks the transition table"
            )


@dataclass(frozen=True, slots=True)
class Publish:
    """Append one event."""

    event: Event

    def __post_init__(self) -> None:
        _not_a_transition((self.event,))


@dataclass(frozen=True, slots=True)
class PublishBatch:
    """Append ``events`` as one atomic batch: a reader sees all of them or none."""

    events: tuple[Event, ...]

    def __post_init__(self) -> None:
        _not_a_transition(self.events)


@dataclass(frozen=True, slots=True)
class PublishIf:
    """Append ``event`` only while its subject's last sequence is ``expected`` (0: empty)."""

    event: Event
    expected: int

    def __post_init__(self) -> None:
        _not_a_transition((self.event,))


@dataclass(frozen=True, slots=True)
class MoveUnit:
    """Move a unit as ``move`` says, if its subject is still at ``expected``.

    ``event_id`` is derived from what the move answers (see
    :func:`schemas.ids.answer_id`), so repeating the same decision stores nothing
    twice.
    """

    project: str
    move: Move
    event_id: str
    expected: int


class Held(msgspec.Struct, frozen=True):
    """What the shell needs to renew and release a lease: the item and the sequence of
    the last lease event it saw on the item's subject. Set on an effect by the lease layer
    (:func:`workers.leases.decide.claim`); a Struct beside :class:`Effect` so that an
    effect's every field is typed data (tests/architecture/test_effect_types.py)."""

    project: str
    work: Work
    item: str
    holder: str
    ttl_s: float
    seq: int
    deadline: datetime | None = None
    """When the holder stops renewing and cancels the work (``None``: never)."""


class Effect(msgspec.Struct, frozen=True, kw_only=True, tag_field="effect"):
    """Work for the daemon's shell: the base of every daemon's effects.

    A daemon declares each effect it asks for as a subclass with an explicit, versioned tag
    (``tag="gate_runner.run.v1"``), as events are declared, and its own fields; its shell's
    ``perform`` is one ``match`` over the daemon's union of them, closed by
    ``typing.assert_never`` so mypy holds it exhaustive. ``key`` is the effect's
    idempotency key: while an effect with that key runs, asking again does nothing; one that
    raised is not run again by the same process. Each subclass derives it from what the
    effect answers (an ask's id, a commit), never from the time.
    """

    project: str
    lease: Held | None = None
    """The lease this replica holds on the effect's work item, set by the lease layer
    (``workers.leases.decide.claim``) when replicas split the work; ``None`` when the work
    is not leased. Not part of ``key``: the item is the same, leased or not."""

    @property
    def key(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} declares no idempotency key")

    @property
    def action(self) -> str:
        """The effect's tag (what the logs name it by)."""
        return str(self.__struct_config__.tag)


E = TypeVar("E", bound=Effect)
"""A daemon's effects: the union of the tagged :class:`Effect` subclasses it asks for
(``typing.Never`` for a daemon that asks for none)."""

Publishing = Publish | PublishBatch | PublishIf | MoveUnit
"""The intents the kernel carries out itself: what every daemon may return."""

IntentOf: TypeAlias = Publish | PublishBatch | PublishIf | MoveUnit | E
"""What a daemon whose effects are ``E`` may ask for: publishing, and its own effects only.
``workers.kernel.Daemon[E]`` types ``decide`` and ``perform`` with it, so a decision that
returns another daemon's effect is a mypy error, not a surprise at run time."""

Intent = Publish | PublishBatch | PublishIf | MoveUnit | Effect
"""Everything a decision can ask for, whichever daemon's (the kernel's carrying code is
generic over ``E`` instead; this is for code that handles any daemon's intents)."""
