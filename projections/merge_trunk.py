"""The trunk side of the ``merges`` fold: where trunk is and what moved it there, the trunk
gates' verdict on it, the last trunk known green (what a revert goes back to), the latest
merge until it is settled, and the trunk-red findings sent to units' authors.

The state lives in :class:`projections.merges.MergesState` (``trunk``, ``last_advance``,
``reds``, ``gate_findings`` and their counters); these are the fold's steps for those fields
and the queries over them. Trunk moves only by a system fact (an advance, a revert, a
landing) or when a trunk run finds it somewhere else (an outside push, never trusted as
green until its own run passes).
"""

from datetime import datetime
from typing import TYPE_CHECKING, Any

import msgspec

from projections import gate_findings
from schemas import FindingRaised
from schemas.contract import ConfigLanded, ContractLanded
from schemas.merges import CandidateTested, CheckVerdict, FailingTest, MergeReverted, TrunkAdvanced

if TYPE_CHECKING:  # the fold's state holds the trunk; this module only steps it
    from projections.merges import MergesState

TRUNK_RED_CLASS = "trunk-red"
CONTRACT_WRONG_CLASS = "contract-wrong"
TRUNK_PRODUCER = "trunk_gate"


class Tested(msgspec.Struct, kw_only=True):
    """A trunk gate run as the log recorded it (a ``CandidateTested``)."""

    id: str
    candidate: str
    tree: str
    base: str | None
    outcome: str
    checks: list[CheckVerdict] = []
    failing: list[FailingTest] = []
    config: str = ""
    """The digest of the adopted configuration the run was judged with (empty: before
    adoptions existed): a result judged with another configuration does not count."""

    @property
    def green(self) -> bool:
        return self.outcome == "pass"


class Advance(msgspec.Struct, kw_only=True):
    """The latest merge that reached trunk, until it is done or reverted."""

    id: str
    unit: str
    commit: str
    merge: str
    tree: str
    previous: str
    at: datetime
    reverted: str | None = None
    done: bool = False
    """The unit was marked done (trunk green after it merged)."""
    returned: bool = False
    """The unit moved after the revert (the merger returns it to work)."""


class TrunkView(msgspec.Struct, kw_only=True):
    """Trunk as the merger last recorded it.

    ``moved_by`` is the ``TrunkAdvanced`` / ``MergeReverted`` id that put it at ``commit``
    (``None`` when the merger found it there: first sight, or an outside push). ``checked``
    is the trunk gates' verdict on ``commit`` (``None`` until they ran).
    """

    commit: str | None = None
    tree: str | None = None
    moved_by: str | None = None
    checked: Tested | None = None
    green_commit: str | None = None
    green_tree: str | None = None
    red_notice: str | None = None
    """The trunk commit the operator was told is red with no green trunk to go back to."""
    red_findings: list[str] = []
    """Those notices still open: resolved once trunk is checked green."""
    recheck: str | None = None
    """The latest operator request to gate trunk again (``trunk.recheck``)."""
    rechecked: str | None = None
    """The request the latest trunk run answered."""


class RedRecord(msgspec.Struct, kw_only=True):
    """An open trunk-red finding sent to a unit's author."""

    finding: str
    unit: str
    interface: list[str]
    stage: str
    at: datetime


def tested_of(event: CandidateTested) -> Tested:
    return Tested(
        id=event.id,
        candidate=event.candidate,
        tree=event.tree,
        base=event.base,
        outcome=event.outcome,
        checks=list(event.checks),
        failing=list(event.failing),
        config=event.config,
    )


def _moved(trunk: TrunkView, commit: str, tree: str, by: str, *, recheck: bool) -> TrunkView:
    """Trunk moved by the system to ``commit``: the last green trunk is kept (what a revert
    goes back to); a recheck request is kept only when ``recheck`` (a landing, which the
    operator may have asked to gate again)."""
    return TrunkView(
        commit=commit,
        tree=tree,
        moved_by=by,
        green_commit=trunk.green_commit,
        green_tree=trunk.green_tree,
        recheck=trunk.recheck if recheck else None,
        rechecked=trunk.rechecked if recheck else None,
    )


def advanced(state: "MergesState", event: TrunkAdvanced) -> None:
    state.merged += 1
    state.trunk = _moved(state.trunk, event.merge, event.tree, event.id, recheck=False)
    state.last_advance = Advance(
        id=event.id,
        unit=event.unit,
        commit=event.commit,
        merge=event.merge,
        tree=event.tree,
        previous=event.previous,
        at=event.at,
    )


def reverted(state: "MergesState", event: MergeReverted) -> None:
    state.reverted += 1
    state.trunk = _moved(state.trunk, event.revert, event.tree, event.id, recheck=False)
    if state.last_advance is not None and state.last_advance.merge == event.merge:
        state.last_advance.reverted = event.id


def landed(state: "MergesState", event: ContractLanded | ConfigLanded) -> None:
    # The merger's own commit of a contract or an approved proposal: trunk moved by the
    # system (gated as its own move, never as an outside push).
    state.trunk = _moved(state.trunk, event.commit, event.tree, event.id, recheck=True)


def checked(state: "MergesState", event: CandidateTested, tested: Tested) -> None:
    """A trunk run's verdict on the commit it ran on."""
    trunk = state.trunk
    if trunk.commit != event.candidate:  # trunk found somewhere the merger did not put it
        trunk = state.trunk = TrunkView(
            commit=event.candidate,
            tree=event.tree,
            moved_by=None,
            green_commit=trunk.green_commit,
            green_tree=trunk.green_tree,
            red_notice=trunk.red_notice,
            red_findings=trunk.red_findings,
            recheck=trunk.recheck,
            rechecked=trunk.rechecked,
        )
    trunk.checked = tested
    if event.cause is not None and event.cause == trunk.recheck:
        trunk.rechecked = event.cause
    if tested.green:
        trunk.green_commit, trunk.green_tree = event.candidate, event.tree


def finding(state: "MergesState", event: FindingRaised) -> None:
    """A trunk gate's finding: a red sent to a unit's author, a red trunk with no green to
    go back to, or reds promoted to ``contract-wrong``."""
    if event.producer != TRUNK_PRODUCER:
        return
    evidence: dict[str, Any] = event.evidence
    if event.cls == TRUNK_RED_CLASS and event.unit is not None:
        interface = evidence.get("interface")
        state.reds.setdefault(event.unit, []).append(
            RedRecord(
                finding=event.id,
                unit=event.unit,
                interface=[str(t) for t in interface] if isinstance(interface, list) else [],
                stage=str(evidence.get("stage", "")),
                at=event.at,
            )
        )
    elif event.cls == TRUNK_RED_CLASS and evidence.get("trunk_red_without_green"):
        state.trunk.red_notice = str(evidence.get("trunk", ""))
        state.trunk.red_findings.append(event.id)
    elif event.cls == CONTRACT_WRONG_CLASS:
        promoted = evidence.get("promoted_from")
        if isinstance(promoted, list):
            state.promoted += 1
            for found in promoted:
                resolved(state, str(found))


def resolved(state: "MergesState", finding: str) -> None:
    gate_findings.closed(state.gate_findings, finding)
    if finding in state.trunk.red_findings:
        state.trunk.red_findings = [f for f in state.trunk.red_findings if f != finding]
    for unit, records in list(state.reds.items()):
        kept = [r for r in records if r.finding != finding]
        if kept:
            state.reds[unit] = kept
        else:
            del state.reds[unit]


# -- queries ----------------------------------------------------------------------------


def open_reds(state: "MergesState", unit: str) -> list[RedRecord]:
    """Trunk-red findings sent to ``unit``'s author that are still open, oldest first."""
    return list(state.reds.get(unit, []))


def same_interface(record: RedRecord, interface: list[str]) -> list[str]:
    """The failing tests ``interface`` shares with an earlier red (empty: a different one)."""
    return sorted(set(record.interface) & set(interface))


def trunk_settled(state: "MergesState") -> bool:
    """True when trunk's gates ran on the commit trunk is at and it was green."""
    checked = state.trunk.checked
    return checked is not None and checked.green and checked.candidate == state.trunk.commit
