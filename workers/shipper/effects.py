"""The shipper's effects: what its decision asks its shell to do.

* :class:`ScanTrunk` scans the commits reachable from trunk and from no tip scanned before
  for credentials; keyed by the count of trunk moves it answers;
* :class:`BundleSlice` makes a closed slice's branch, tag, description and bundle;
* :class:`ShipBundle` runs the ``[ship] command`` on a bundle.
"""

from __future__ import annotations

from typing import TypeAlias

from projections.intents import Effect, IntentOf
from projections.risk import RiskState
from projections.shipping import ShippingState
from projections.slices import SlicesState
from schemas.ship import SliceBundled


class ScanTrunk(Effect, frozen=True, tag="shipper.scan_trunk.v1"):
    """Scan trunk's history past ``tips`` (the tips scanned before); ``moves``: the trunk
    moves it answers; ``seed``: the last move's id (the scan fact's id derives from it)."""

    moves: int
    tips: list[str]
    seed: str | None = None

    @property
    def key(self) -> str:
        return f"{self.project}:scan:{self.moves}"


class BundleSlice(Effect, frozen=True, tag="shipper.bundle_slice.v1"):
    """Bundle ``slice`` (closing the plan accepted as ``cause``), its description read
    from the folds as the decision saw them."""

    slice: str
    cause: str
    views: SlicesState
    risk: RiskState
    shipping: ShippingState

    @property
    def key(self) -> str:
        return f"{self.project}:bundle:{self.slice}"


class ShipBundle(Effect, frozen=True, tag="shipper.ship_bundle.v1"):
    """Run the ``[ship] command`` on ``bundled``."""

    bundled: SliceBundled
    command: str

    @property
    def key(self) -> str:
        return f"{self.project}:ship:{self.bundled.slice}"


ShipperEffect = ScanTrunk | BundleSlice | ShipBundle
"""Every effect the shipper asks for."""

ShipperIntent: TypeAlias = IntentOf[ShipperEffect]
"""What the shipper may ask for (``decide``, ``perform``): publishing, and its own effects."""
