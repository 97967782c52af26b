"""The ``leases`` projection: who holds which work item, until when, and who lapsed.

Folds the lease facts (:mod:`schemas.leases`). Every event of one item is stored
conditionally on the item's subject, so the log orders them and one replica wins each
taking; the fold still checks that a renewal or a release comes from the holder, and that
a taking of a held item names the holder it takes over from. A released lease leaves the
state (its item is finished, or free for anyone); the counters and the last lapses stay,
for ``status``. Whether a lease is live depends on the time, so the fold keeps when it was
last taken or renewed, and :func:`live` is asked with the caller's clock.

A taking may carry a deadline (``deadline_s`` after it): a lease past its deadline is not
live even while its holder still renews it, so a holder that is alive but stuck (renewing,
never finishing) loses the item like a dead one; :func:`overrunning` says which.
"""

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
    deadline_s: float | None = None

    @property
    def until(self) -> datetime:
        return self.renewed + timedelta(seconds=self.ttl_s)

    @property
    def deadline(self) -> datetime | None:
        """When the holder must have given the item up (``None``: never)."""
        if self.deadline_s is None:
            return None
        return self.since + timedelta(seconds=self.deadline_s)


class Overrun(msgspec.Struct):
    """``holder`` gave ``item`` up at ``at`` because its work ran past the deadline."""

    holder: str
    at: datetime
    ttl_s: float


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
    overran: dict[str, int] = {}
    """Work kind -> leases given up (``overran``) or taken over past their deadline."""
    overruns: dict[str, Overrun] = {}
    """``<work>.<item>`` -> the last holder that overran it, until another takes it."""


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
                    state.overruns.pop(key(event.work, event.item), None)
                if event.how == "overran":
                    state.overran[event.work] = state.overran.get(event.work, 0) + 1
                    overrun = Overrun(event.holder, event.at, lease.ttl_s)
                    state.overruns[key(event.work, event.item)] = overrun
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
        deadline_s=event.deadline_s,
    )
    state.taken[event.work] = state.taken.get(event.work, 0) + 1
    gone = state.overruns.get(key(event.work, event.item))
    if gone is not None and gone.holder != event.holder:
        del state.overruns[key(event.work, event.item)]  # another replica has it now
    if held is not None and overrunning(held, event.at):
        state.overran[event.work] = state.overran.get(event.work, 0) + 1
    if held is not None and event.lapsed is not None:
        state.lapsed[event.work] = state.lapsed.get(event.work, 0) + 1
        lapse = Lapse(event.work, event.item, event.lapsed, event.holder, event.at, event.what)
        state.lapses = [*state.lapses, lapse][-RECENT_LAPSES:]


def lease_of(state: LeasesState, work: str, item: str) -> Lease | None:
    return state.leases.get(key(work, item))


def live(lease: Lease | None, now: datetime) -> bool:
    """True while ``lease`` is held, renewed in time and not past its deadline."""
    return lease is not None and now < lease.until and not overrunning(lease, now)


def overrunning(lease: Lease, now: datetime) -> bool:
    """True when ``lease`` is past its deadline: its holder should have given the item up
    (and, if it still renews, is stuck); any replica may take the item over."""
    deadline = lease.deadline
    return deadline is not None and now >= deadline


def left_by(state: LeasesState, work: str, item: str, holder: str, now: datetime) -> bool:
    """True while ``holder`` must leave ``item`` to the other replicas: it overran the
    item less than one lease lifetime ago (another replica, if any is up, takes it first;
    after that it may try again itself, so a lone replica still gets the work done)."""
    gone = state.overruns.get(key(work, item))
    if gone is None or gone.holder != holder:
        return False
    return now < gone.at + timedelta(seconds=gone.ttl_s)


def holders(state: LeasesState, now: datetime) -> dict[str, list[Lease]]:
    """Holder -> the live leases it holds."""
    out: dict[str, list[Lease]] = {}
    for lease in state.leases.values():
        if live(lease, now):
            out.setdefault(lease.holder, []).append(lease)
    return out


FOLD = Fold(name="leases", state_type=LeasesState, initial=initial, apply=apply)
