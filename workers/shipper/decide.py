"""The shipper's decision: pure, over the ``risk`` and ``shipping`` folds.

* Trunk may have moved since the last scan (a merge landed or reverted, a slice closed):
  scan it first, and decide nothing else until the scan is on the log — a slice is
  bundled only from a trunk whose whole history was read.
* While a credential finding is open nothing is bundled (a bundle carries history).
* A slice :func:`ready_to_ship` and not bundled is bundled; a bundled one whose project
  configures ``[ship] command`` and has no run of it gets one.
"""

from __future__ import annotations

from dataclasses import dataclass

from projections import risk, shipping, slices, verify
from projections.risk import RiskState
from projections.shipping import ShippingState
from projections.slices import SlicesState, SliceView
from projections.verify import VerifyState
from workers.kernel import World
from workers.shipper.effects import BundleSlice, ScanTrunk, ShipBundle, ShipperIntent


@dataclass(frozen=True)
class Options:
    command: str | None = None


def ready_to_ship(view: SliceView, checked: VerifyState) -> bool:
    """THE trigger of a PR bundle: a closed slice the system judged shipped (the SHIP
    verdict, ``verify.ship_judged.v1``, for the plan it closed). A slice closed not shipped,
    or not judged yet, is never bundled."""
    judged = checked.judged.get(view.accepted)
    return view.status == "closed" and judged is not None and judged.shipped


def decide(world: World, options: Options) -> list[ShipperIntent]:
    ship: ShippingState = world.state(shipping.FOLD.name)
    views: SlicesState = world.state(slices.FOLD.name)
    state: RiskState = world.state(risk.FOLD.name)
    checked: VerifyState = world.state(verify.FOLD.name)
    project = world.project
    if ship.moves > ship.scanned_moves:
        return [
            ScanTrunk(project=project, moves=ship.moves, tips=list(ship.tips), seed=ship.last_move)
        ]
    if shipping.hold(ship):
        return []
    intents: list[ShipperIntent] = []
    for slice_id, view in views.slices.items():
        if not ready_to_ship(view, checked):
            continue
        bundled = ship.bundled.get(slice_id)
        if bundled is None:
            intents.append(
                BundleSlice(
                    project=project,
                    slice=slice_id,
                    cause=view.accepted,
                    views=views,
                    risk=state,
                    shipping=ship,
                )
            )
        elif options.command and slice_id not in ship.ran:
            intents.append(ShipBundle(project=project, bundled=bundled, command=options.command))
    return intents
