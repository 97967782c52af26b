"""``status``'s lines for the ``leases`` projection: who holds which work item now, how
the work was split between replicas, the recent lapses, and any holder past its deadline."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from projections import leases as leases_fold
from schemas.ids import utcnow

SHOWN = 10


def render_leases(
    state: leases_fold.LeasesState, sizes: Mapping[str, int] = {}, now: datetime | None = None
) -> list[str]:
    now = now or utcnow()
    works = sorted(set(state.taken) | set(state.released))
    counts = ", ".join(
        f"{w} {state.taken.get(w, 0)} taken, {state.released.get(w, 0)} released, "
        f"{state.lapsed.get(w, 0)} lapsed"
        + (f", {state.overran[w]} overran" if state.overran.get(w) else "")
        for w in works
    )
    held = leases_fold.holders(state, now)
    lines = [
        f"leases: {sum(len(v) for v in held.values())} live" + (f" ({counts})" if counts else "")
    ]
    for holder, leases in sorted(held.items()):
        items = ", ".join(
            f"{lease.work} {lease.what or lease.item} ({_left(lease, now)})"
            for lease in leases[:SHOWN]
        )
        more = f", … {len(leases) - SHOWN} more" if len(leases) > SHOWN else ""
        lines.append(f"  {holder} holds {items}{more}")
    overdue = [held for held in state.leases.values() if not leases_fold.live(held, now)]
    for lease in overdue[:SHOWN]:
        deadline = lease.deadline
        if deadline is not None and leases_fold.overrunning(lease, now):
            # Still renewed past its deadline means a holder alive but stuck.
            renewing = " and still renewing" if now < lease.until else ""
            lines.append(
                f"  {lease.work} {lease.what or lease.item}: {lease.holder} is "
                f"{_seconds(now - deadline)} s past its deadline{renewing} (overrunning), "
                "free for another replica"
            )
            continue
        lines.append(
            f"  {lease.work} {lease.what or lease.item}: {lease.holder}'s lease ran out "
            f"{_seconds(now - lease.until)} s ago, free for another replica"
        )
    if state.by_holder:
        split = ", ".join(f"{h} {n}" for h, n in sorted(state.by_holder.items()))
        lines.append(f"  finished by holder: {split}")
    for lapse in state.lapses[-SHOWN:]:
        lines.append(
            f"  lapsed {lapse.at:%H:%M:%S}: {lapse.work} {lapse.what or lapse.item} of "
            f"{lapse.holder}, taken over by {lapse.by}"
        )
    return lines


def _left(lease: leases_fold.Lease, now: datetime) -> str:
    left = f"{_seconds(lease.until - now)} s left"
    if lease.deadline is None:
        return left
    return f"{left}, deadline in {_seconds(lease.deadline - now)} s"


def _seconds(span: timedelta) -> str:
    return f"{span.total_seconds():.0f}"
