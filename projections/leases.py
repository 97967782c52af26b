"""The ``leases`` projection: who holds which work item, until when, and who lapsed.

Folds the lease facts (:mod:`schemas.leases`). Every event of one item is stored
conditionally on the item's subject, so the log orders them and one replica wins each
taking; the fold still checks that a renewal or a release comes from the holder, and that
a taking of a held item names the holder it takes over from. A released lease leaves the
state (its item is finished, or free for anyone); the counters and the last lapses stay,
for ``status``. Whether a lease is live depends on the time, so the fold keeps when it was
last taken or renewed, and :func:`live` is asked with the caller's clock.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import msgspec

from projections.base import Fold
from schemas import Event
from schemas.leases import LeaseReleased, LeaseRenewed, LeaseTaken

RECENT_LAPSES = 20


class Lease(msgspec.Struct):
    work: str
    item: str
    holder: str
    ttl_s: float
    since: datetime
    renewed: datetime
    what: str = ""
    takings: int = 1

    @property
    def until(self) -> datetime:
        return self.renewed + timedelta(seconds=self.ttl_s)


class Lapse(msgspec.Struct):
    """``holder``'s lease of ``item`` ran out unrenewed; ``by`` took the item over."""

    work: str
    item: str
    holder: str
    by: str
    at: datetime
    what: str = ""


class LeasesState(msgspec.Struct):
    leases: dict[str, Lease] = {}
    """``<work>.<item>`` -> the lease not released yet (live or lapsed)."""
    taken: dict[str, int] = {}
    """Work kind -> leases taken (takeovers included)."""
    released: dict[str, int] = {}
    lapsed: dict[str, int] = {}
    lapses: list[Lapse] = []
    """The last :data:`RECENT_LAPSES` lapses, oldest first."""
    by_holder: dict[str, int] = {}
    """Holder -> items it finished (released ``done``): how the work was split."""


def initial() -> LeasesState:
    return LeasesState()


def key(work: str, item: str) -> str:
    return f"{work}.{item}"


def apply(state: LeasesState, event: Event) -> LeasesState:
    match event:
        case LeaseTaken():
            _taken(state, event)
        case LeaseRenewed():
            lease = state.leases.get(key(event.work, event.item))
            if lease is not None and lease.holder == event.holder:
                lease.renewed, lease.ttl_s = event.at, event.ttl_s
        case LeaseReleased():
            lease = state.leases.get(key(event.work, event.item))
            if lease is not None and lease.holder == event.holder:
                del state.leases[key(event.work, event.item)]
                state.released[event.work] = state.released.get(event.work, 0) + 1
                if event.how == "done":
                    state.by_holder[event.holder] = state.by_holder.get(event.holder, 0) + 1
    return state


def _taken(state: LeasesState, event: LeaseTaken) -> None:
    held = state.leases.get(key(event.work, event.item))
    if held is not None and held.holder != event.lapsed:
        return  # a taking that does not say whose lease it ends takes nothing
    state.leases[key(event.work, event.item)] = Lease(
        work=event.work,
        item=event.item,
        holder=event.holder,
        ttl_s=event.ttl_s,
        since=event.at,
        renewed=event.at,
        what=event.what,
        takings=(held.takings + 1) if held is not None else 1,
    )
    state.taken[event.work] = state.taken.get(event.work, 0) + 1
    if held is not None and event.lapsed is not None:
        state.lapsed[event.work] = state.lapsed.get(event.work, 0) + 1
        lapse = Lapse(event.work, event.item, event.lapsed, event.holder, event.at, event.what)
        state.lapses = [*state.lapses, lapse][-RECENT_LAPSES:]


def lease_of(state: LeasesState, work: str, item: str) -> Lease | None:
    return state.leases.get(key(work, item))


def live(lease: Lease | None, now: datetime) -> bool:
    """True while ``lease`` is held and not past its time."""
    return lease is not None and now < lease.until


def holders(state: LeasesState, now: datetime) -> dict[str, list[Lease]]:
    """Holder -> the live leases it holds."""
    out: dict[str, list[Lease]] = {}
    for lease in state.leases.values():
        if live(lease, now):
            out.setdefault(lease.holder, []).append(lease)
    return out


FOLD = Fold(name="leases", state_type=LeasesState, initial=initial, apply=apply)
