"""The ``shipping`` projection: trunk's secret scans, open secret findings, bundles, ship runs.

* ``moves`` counts the facts that move trunk (a merge landed or reverted, a slice closed);
  ``scanned_moves`` is the count the latest :class:`TrunkScanned` answered, so the shipper
  scans again exactly when trunk may have moved since.
* ``tips`` are the tips scanned so far: the next scan reads only the commits reachable from
  trunk and from none of them (incremental, whatever rewrote what).
* ``secrets`` are the open findings of criterion :data:`SECRET_CRITERION` the system
  raised; an operator settles one with ``loopbus finding resolve|dismiss`` (the lifecycle
  daemon's facts close it here). While one is open, :func:`hold` says why the dispatcher
  must start nothing and the shipper bundles nothing.

Only the system's facts count, and of those only the secret findings a ``TrunkScanned``
lists (the shipper publishes them in one batch): the system re-raises a reviewer's or an
investigator's finding with the criterion the agent chose, so a criterion alone could let
an agent freeze the loop. Nor can an agent close one.
"""

import msgspec

from projections.base import Fold
from schemas import Event, FindingRaised, FindingResolved
from schemas.decisions import ObjectiveDeclared
from schemas.lifecycle import FindingDismissed, FindingReopened
from schemas.merges import MergeReverted, TrunkAdvanced
from schemas.ship import SECRET_CRITERION, ShipCommandRan, SliceBundled, TrunkScanned
from schemas.slices import SliceClosed


class ShippingState(msgspec.Struct, kw_only=True):
    moves: int = 0
    last_move: str | None = None
    """The id of the latest trunk-moving fact: the seed of the scan that answers it."""
    scanned_moves: int = -1
    tips: list[str] = []
    secrets: dict[str, str] = {}
    """Open secret finding id -> its message."""
    candidates: dict[str, str] = {}
    """Findings of the secret criterion no scan has listed (yet): they hold nothing."""
    scanned_findings: list[str] = []
    """Every finding a scan listed (a reopened one holds again only if it is one of them)."""
    bundled: dict[str, SliceBundled] = {}
    ran: dict[str, ShipCommandRan] = {}
    objectives: dict[str, str] = {}
    """Live charter objectives: id -> text (what a PR description's "why" names)."""


def initial() -> ShippingState:
    return ShippingState()


def apply(state: ShippingState, event: Event) -> ShippingState:
    if event.actor.role != "system" and not isinstance(event, ObjectiveDeclared):
        return state
    match event:
        case TrunkAdvanced() | MergeReverted() | SliceClosed():
            state.moves += 1
            state.last_move = event.id
        case TrunkScanned():
            if event.tip not in state.tips:
                state.tips.append(event.tip)
            state.scanned_moves = max(state.scanned_moves, event.moves)
            for finding in event.findings:
                if finding in state.candidates:
                    state.secrets[finding] = state.candidates.pop(finding)
                    state.scanned_findings.append(finding)
        case FindingRaised(criterion=criterion) if criterion == SECRET_CRITERION:
            state.candidates[event.id] = event.message
        case FindingReopened() if event.finding in state.scanned_findings:
            state.secrets[event.finding] = event.original.message
        case FindingResolved() | FindingDismissed():
            state.secrets.pop(event.finding, None)
        case SliceBundled():
            state.bundled.setdefault(event.slice, event)
        case ShipCommandRan():
            state.ran.setdefault(event.slice, event)
        case ObjectiveDeclared() if event.actor.role == "operator":
            if event.live:
                state.objectives[event.objective] = event.text
            else:
                state.objectives.pop(event.objective, None)
    return state


def hold(state: ShippingState) -> str:
    """Why nothing may advance past a barrier now (``""``: nothing holds it)."""
    if not state.secrets:
        return ""
    first = next(iter(state.secrets))
    return (
        f"{len(state.secrets)} open finding(s) of a credential in trunk's tree or history "
        f"(first: {first}); an operator settles each with `loopbus finding resolve|dismiss`"
    )


FOLD = Fold(name="shipping", state_type=ShippingState, initial=initial, apply=apply)
