"""loopbus projections: pure folds of the log into the loop's state. Never imports ``bus``.

Each projection module exposes ``FOLD`` (a :class:`projections.base.Fold`) and query
functions. :data:`FOLDS` is every projection a daemon keeps: the projector materialises
them and ``loopbus replay`` folds them, so any decision a daemon took can be audited from
the log; add a new projection's ``FOLD`` here.

As in ``schemas``, no module here uses ``from __future__ import annotations``: msgspec
evaluates a state's annotations to decode a view and to cut it into values
(``bus.view_layout``), and string annotations are compiled first. A name defined further
down is written in quotes.
"""

from collections.abc import Iterable
from typing import Any

from projections import (
    blocking,
    budgets,
    builds,
    charter,
    contract_landing,
    convergence,
    decisions,
    finding_lifecycle,
    findings,
    gates,
    integrity,
    investigations,
    leases,
    lessons,
    merges,
    planner,
    ratchet,
    reviews,
    risk,
    shipping,
    slices,
    units,
    verify,
    wave_review,
)
from projections.base import Fold, FoldFailure, apply_guarded, is_forged, to_builtins
from schemas import Event

FOLDS: tuple[Fold[Any], ...] = (
    units.FOLD,
    findings.FOLD,
    gates.FOLD,
    slices.FOLD,
    budgets.FOLD,
    convergence.FOLD,
    merges.FOLD,
    reviews.FOLD,
    investigations.FOLD,
    integrity.FOLD,
    finding_lifecycle.FOLD,
    ratchet.FOLD,
    lessons.FOLD,
    decisions.FOLD,
    blocking.FOLD,
    builds.FOLD,
    charter.FOLD,
    contract_landing.FOLD,
    planner.FOLD,
    verify.FOLD,
    wave_review.FOLD,
    leases.FOLD,
    risk.FOLD,
    shipping.FOLD,
)

ProjectStates = dict[str, Any]
"""projection name -> state, for one project."""


def initial_states() -> ProjectStates:
    return {fold.name: fold.initial() for fold in FOLDS}


def apply_all(
    states: ProjectStates, event: Event, failures: list[FoldFailure] | None = None
) -> ProjectStates:
    """Apply one event to every projection of its project. A fold that raises skips the
    event (see :func:`~projections.base.apply_guarded`); ``failures``, when given,
    collects why."""
    forged = is_forged(event)  # once for every fold, not once inside each
    for fold in FOLDS:
        states[fold.name], failure = apply_guarded(fold, states[fold.name], event, forged)
        if failure is not None and failures is not None:
            failures.append(failure)
    return states


def fold_events(events: Iterable[Event]) -> dict[str, ProjectStates]:
    """Fold a whole event sequence, per project (what a replay computes)."""
    by_project: dict[str, ProjectStates] = {}
    for event in events:
        states = by_project.get(event.project)
        if states is None:
            states = by_project[event.project] = initial_states()
        apply_all(states, event)
    return by_project


__all__ = [
    "FOLDS",
    "Fold",
    "FoldFailure",
    "ProjectStates",
    "apply_all",
    "apply_guarded",
    "fold_events",
    "initial_states",
    "to_builtins",
]
