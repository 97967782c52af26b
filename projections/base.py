"""The fold protocol every projection follows.

A projection is a pure fold over one project's events: ``apply(state, event) -> state``
plus query functions over the state. No I/O, no logging, no clock, no randomness: the
same fold runs live in the projector, in ``loopbus replay``, and in unit tests, and that
sameness is what makes a replay an audit rather than a reconstruction.

States are *owned*: ``apply`` may update the state it is given in place and return it,
because copying a state per event would make folding a long log quadratic. Whoever
holds a state and wants to keep an old version copies it first (``msgspec`` round trip).

A fold that raises on one event skips that event (:func:`apply_guarded`): the state keeps
whatever the fold did before raising, and the fold carries on with the next event. Every
daemon and ``replay`` apply the same rule, so a view still equals a replay; the daemons
record each such failure on the log (``fold.quarantined.v1``).
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import msgspec

from schemas import Event
from schemas.authority import standing

S = TypeVar("S")


@dataclass(frozen=True)
class Fold(Generic[S]):
    """A named projection: how to start, how to apply one event, and the state's type.

    ``apply`` never sees a forgery (a fact kind from anyone but the system, or a finding a
    role may not claim: :func:`schemas.authority.standing`): the guard is put
    around every fold here, so no projection can forget it. Only a fold made with
    ``sees_forgeries=True`` (the integrity fold, which counts them) gets them.
    """

    name: str
    state_type: type[S]
    initial: Callable[[], S]
    apply: Callable[[S, Event], S]
    sees_forgeries: bool = False
    step: Callable[[S, Event], S] = field(init=False, repr=False, compare=False)
    """The fold's own step, without the guard: :func:`apply_guarded` calls it when the
    caller judged the event's standing once for all its folds; everyone else calls
    ``apply``."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "step", self.apply)
        if self.sees_forgeries:
            return
        step = self.apply

        def apply_facts_and_claims(state: S, event: Event) -> S:
            return state if standing(event) == "forged" else step(state, event)

        object.__setattr__(self, "apply", apply_facts_and_claims)

    def fold(self, events: Iterable[Event], state: S | None = None) -> S:
        """Apply ``events`` in order to ``state`` (a fresh initial state when omitted)."""
        current = self.initial() if state is None else state
        for event in events:
            current = self.apply(current, event)
        return current

    def encode(self, state: S) -> bytes:
        """Deterministic bytes for the materialised view: same events, same bytes."""
        return _encoder.encode(state)

    def decode(self, data: bytes) -> S:
        return msgspec.json.decode(data, type=self.state_type)


_encoder = msgspec.json.Encoder(order="deterministic")


@dataclass(frozen=True)
class FoldFailure:
    """A fold raised on one event: which fold, and what it raised."""

    fold: str
    error: Exception


def is_forged(event: Event) -> bool | None:
    """Whether ``event`` is a forgery, judged once for every fold it is applied to (see
    :func:`apply_guarded`); ``None`` when judging it raises, so each fold's own guard meets
    the error and records it as its failure, as it would without this."""
    try:
        return standing(event) == "forged"
    except Exception:
        return None


def apply_guarded(
    fold: Fold[S], state: S, event: Event, forged: bool | None = None
) -> tuple[S, FoldFailure | None]:
    """``fold.apply(state, event)``; when it raises, the state as the fold left it (folds
    update in place, so possibly half-changed: a replay leaves it the same way) and why.

    ``forged``: the event's :func:`is_forged`, for a caller applying one event to many folds
    (the projector's thirty, a replay's): the guard's rule is then applied here with it
    rather than judged again inside each fold. ``None``: the fold's own guard judges.

    Any ``Exception`` counts (``RecursionError`` included): one event never stops a fold.
    """
    try:
        if forged is None:
            return fold.apply(state, event), None
        if forged and not fold.sees_forgeries:
            return state, None
        return fold.step(state, event), None
    except Exception as exc:
        return state, FoldFailure(fold.name, exc)


def to_builtins(state: Any) -> Any:
    """A state as plain JSON-ready data, for ``--json`` output."""
    return msgspec.to_builtins(state, order="deterministic")
