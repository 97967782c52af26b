"""SHIP and the holds of the stages after a wave merges, for the dispatcher's decision.
Pure: over the ``slices``, ``verify``, ``wave_review`` and ``gates`` folds.

With a ``[verify] command`` or ``[review] wave = true`` the next wave and the close wait
(:func:`verification_holds`); once a slice closed, SHIP is judged
(:func:`ship_judged`, :mod:`projections.ship`).
"""

from __future__ import annotations

from collections.abc import Sequence

from projections import gates, ship, slices
from projections import verify as verify_fold
from projections import wave_review as wave_fold
from projections.slice_dispatch import Action, Close, Dispatch
from projections.slices import SlicesState, SliceView
from projections.trunk_green import TrunkGates
from schemas.ids import answer_id
from schemas.verify import SliceShipJudged
from workers.kernel import World


def verify_state(world: World) -> verify_fold.VerifyState:
    """The folded verifications (empty for a world built without that fold)."""
    found: verify_fold.VerifyState | None = world.states.get(verify_fold.FOLD.name)
    return found if found is not None else verify_fold.initial()


def verification_holds(
    world: World, state: SlicesState, actions: Sequence[Action], rules: ship.ShipRules
) -> list[Action]:
    """With a ``[verify] command`` (and, the same way, with wave review): no unit of a later
    wave is dispatched while a merged wave awaits its verification (trunk at a wave's end is
    what the verifier sees), and no slice closes while one does, a re-opened unit awaits its
    re-review, or a verifier or wave-review finding is open."""
    checked, waves = verify_state(world), wave_state(world)
    kept: list[Action] = []
    for action in actions:
        view = state.slices[action.slice]
        if isinstance(action, Dispatch) and dispatch_held(world, state, action, rules):
            continue
        if isinstance(action, Close) and (
            (rules.verify and verify_fold.close_held(checked, view))
            or (rules.wave_review and wave_fold.close_held(waves, view))
        ):
            continue
        kept.append(action)
    return kept


def dispatch_held(
    world: World, state: SlicesState, action: Dispatch, rules: ship.ShipRules
) -> bool:
    """A unit of a later wave while a merged wave awaits its verification or its wave
    review (see :func:`verification_holds`)."""
    view = state.slices[action.slice]
    return bool(
        (rules.verify and verify_fold.dispatch_held(verify_state(world), view, action.wave))
        or (rules.wave_review and wave_fold.dispatch_held(wave_state(world), view, action.wave))
    )


def wave_state(world: World) -> wave_fold.WaveReviewState:
    """The folded wave reviews (empty for a world built without that fold)."""
    found: wave_fold.WaveReviewState | None = world.states.get(wave_fold.FOLD.name)
    return found if found is not None else wave_fold.initial()


def unjudged(world: World, state: SlicesState) -> list[SliceView]:
    """Closed slices whose SHIP verdict is not on the log yet, in acceptance order."""
    judged = verify_state(world).judged
    return sorted(
        (v for v in state.slices.values() if v.status == "closed" and v.accepted not in judged),
        key=lambda v: v.rank,
    )


def unit_lines(state: SlicesState, view: SliceView) -> dict[str, int | None]:
    """Each done unit's change size, from the completion of its latest dispatch."""
    out: dict[str, int | None] = {}
    for entry in slices.record_entries(state, view.slice):
        unit = view.units.get(entry.unit)
        if unit is None or unit.state != "done" or entry.dispatch not in unit.dispatches[-1:]:
            continue
        out[entry.unit] = entry.completion.lines_changed if entry.completion else None
    return out


def ship_judged(
    world: World, rules: ship.ShipRules, state: SlicesState, view: SliceView
) -> SliceShipJudged:
    """SHIP for a closed slice (:mod:`projections.ship`)."""
    waves = wave_state(world)
    trunk = TrunkGates(
        gates=world.states.get(gates.FOLD.name) or gates.initial(), trees=waves.trees
    )
    found = ship.reasons(
        view,
        verify_state(world),
        rules,
        trunk,
        unit_lines(state, view),
        waves,
    )
    return SliceShipJudged(
        id=answer_id(view.accepted, "ship-judged"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        slice=view.slice,
        accepted=view.accepted,
        shipped=not found,
        reasons=found,
        closed=answer_id(view.accepted, "slice-closed"),
    )
