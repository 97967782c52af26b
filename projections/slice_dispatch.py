"""The dispatch rules over the ``slices`` fold: what is settled, and what the dispatcher does
next.

Settled means a unit will not move again in this slice: it is terminal (done, failed,
lost — a halt is a failure ended by ``halted``) and no retry is owed to it, or it was never
dispatched and one of its transitive blockers ended without being done. The TERMINAL
barrier waits for settled, never for success. A unit awaiting its retry
(:func:`projections.slices.awaiting_retry`) holds its capacity, does not hold its
dependents, and keeps its run-record entry open and its slice from closing.

:func:`next_actions` answers what the dispatcher publishes now; :func:`waiting_on` says,
in plain words, what each unit waits on. Both read the folded state and nothing else.
"""

from collections.abc import Callable

import msgspec

from projections import pacing
from projections.slices import SlicesState, SliceView, awaiting_retry
from schemas import TERMINAL_STATES

FAILED_ENDINGS = frozenset({"failed", "lost"})
"""The terminal states that end a unit without it being done."""


def failed_blocker(view: SliceView, unit_id: str) -> str | None:
    """The unit that ended without being done and that ``unit_id`` waits on, transitively.

    ``None`` while every blocker is done or may still be. When several failed, the first
    reached through ``blocked_by`` in plan order is named, so the answer never varies.
    """
    seen: set[str] = set()
    stack = list(reversed(view.units[unit_id].blocked_by))
    while stack:
        blocker_id = stack.pop()
        if blocker_id in seen or blocker_id not in view.units:
            continue
        seen.add(blocker_id)
        blocker = view.units[blocker_id]
        if blocker.state in FAILED_ENDINGS and not awaiting_retry(blocker):
            return blocker_id
        if blocker.state != "done":
            stack.extend(reversed(blocker.blocked_by))
    return None


def is_settled(view: SliceView, unit_id: str) -> bool:
    """Terminal, or never dispatched and doomed by a failed blocker."""
    unit = view.units[unit_id]
    if unit.state in TERMINAL_STATES:
        return not awaiting_retry(unit)
    return not unit.dispatches and failed_blocker(view, unit_id) is not None


def current_group(view: SliceView) -> tuple[int, int] | None:
    """(wave, sub-wave) the slice is in: the first group with a unit not yet settled."""
    for w, wave in enumerate(view.waves):
        for s, group in enumerate(wave):
            if not all(is_settled(view, unit_id) for unit_id in group):
                return (w, s)
    return None


def running(state: SlicesState) -> list[str]:
    """Units dispatched and not yet terminal (or awaiting a retry), in every slice: what
    holds capacity."""
    return [
        unit.unit
        for view in state.slices.values()
        for unit in view.units.values()
        if unit.dispatches and (unit.state not in TERMINAL_STATES or awaiting_retry(unit))
    ]


def moving(state: SlicesState) -> list[str]:
    """Running units that are building, in review or at the gates: what pacing counts. A
    unit blocked (on the operator, a gate, a budget) or awaiting its retry holds capacity
    but takes neither an agent nor the gates, so it must not stall the slice behind it."""
    return [
        unit.unit
        for view in state.slices.values()
        for unit in view.units.values()
        if unit.dispatches and unit.state in (None, "working")
    ]


class Dispatch(msgspec.Struct, frozen=True, kw_only=True):
    slice: str
    unit: str
    wave: int
    sub_wave: int
    position: int
    attempt: int


class BlockDependent(msgspec.Struct, frozen=True, kw_only=True):
    slice: str
    unit: str
    failed: str


class Complete(msgspec.Struct, frozen=True, kw_only=True):
    slice: str
    unit: str
    dispatch: str


class Close(msgspec.Struct, frozen=True, kw_only=True):
    slice: str


class PlanUnits(msgspec.Struct, frozen=True, kw_only=True):
    slice: str
    units: list[str]


class Retry(msgspec.Struct, frozen=True, kw_only=True):
    """Answer the retryable failure ``failure`` of ``unit``: retry it, or say why not."""

    slice: str
    unit: str
    failure: str


class Revive(msgspec.Struct, frozen=True, kw_only=True):
    """Move ``unit`` back to work, as the retry decision ``decision`` granted."""

    slice: str
    unit: str
    decision: str


Action = PlanUnits | Retry | Revive | BlockDependent | Complete | Dispatch | Close


def next_actions(
    state: SlicesState,
    capacity: int,
    stopped: frozenset[str] = frozenset(),
    *,
    paced: bool = True,
    held: Callable[[Dispatch], bool] = lambda _dispatch: False,
) -> list[Action]:
    """What the dispatcher should publish now, in this order.

    ``UnitPlanned`` for accepted units not yet planned on the log (after a crash between
    the acceptance and its units); the retry decisions owed to failed units and the moves
    back to work they granted; blocks for undispatched dependents of a failed unit;
    completions of the run-record
    entries of units that reached the barrier; dispatches of the current group's next units
    in dispatch order, slices in acceptance order, up to ``capacity`` running units; and a
    close for each open slice whose units are all settled and whose entries are complete.
    Units in ``stopped`` (reached by an open blocked-by-fact finding) are not dispatched.
    ``paced``: the units building, in review or at the gates (:func:`moving`) are also
    held under :func:`projections.pacing.moving_limit`. A dispatch ``held`` answers true for
    (a contract not landed yet, a wave awaiting its verification) is left out without
    taking a place, so it never keeps another slice's unit waiting.
    """
    actions: list[Action] = []
    free = capacity - len(running(state))
    if paced:
        free = min(free, pacing.moving_limit(state.pace, capacity) - len(moving(state)))
    for view in sorted(state.slices.values(), key=lambda v: v.rank):
        if view.status == "discarded":
            actions.extend(_completions(view))
            continue
        if view.status != "open":
            continue
        # A unit another slice's plan holds is that slice's to plan: its UnitPlanned here
        # would never count (the fold files it under its owner), so it is never asked for.
        unplanned = [
            u.id
            for u in view.plan.units
            if not view.units[u.id].planned and state.unit_slice.get(u.id) == view.slice
        ]
        if unplanned:
            actions.append(PlanUnits(slice=view.slice, units=unplanned))
        actions.extend(_retries(view))
        for unit_id in view.order:
            unit = view.units[unit_id]
            if unit.dispatches or unit.state in TERMINAL_STATES:
                continue
            failed = failed_blocker(view, unit_id)
            if failed is None:
                continue
            if unit.block is None or unit.block.subject != failed:
                actions.append(BlockDependent(slice=view.slice, unit=unit_id, failed=failed))
        completions = _completions(view)
        actions.extend(completions)
        group = current_group(view)
        if group is None:
            if not completions:
                actions.append(Close(slice=view.slice))
            continue
        wave, sub_wave = group
        for unit_id in view.waves[wave][sub_wave]:
            unit = view.units[unit_id]
            if free <= 0:
                break
            if unit.dispatches or unit.state is not None or unit_id in stopped:
                continue
            if failed_blocker(view, unit_id) is not None:
                continue
            if any(view.units[b].state != "done" for b in unit.blocked_by if b in view.units):
                continue
            dispatch = Dispatch(
                slice=view.slice,
                unit=unit_id,
                wave=wave,
                sub_wave=sub_wave,
                position=unit.position,
                attempt=len(unit.dispatches) + 1,
            )
            if held(dispatch):
                continue
            actions.append(dispatch)
            free -= 1
    return actions


def _retries(view: SliceView) -> list[Retry | Revive]:
    out: list[Retry | Revive] = []
    for unit_id in view.order:
        unit = view.units[unit_id]
        if unit.state != "failed" or unit.failure is None:
            continue
        if unit.retry == "awaiting":
            out.append(Retry(slice=view.slice, unit=unit_id, failure=unit.failure))
        elif unit.retry == "granted" and unit.retry_decision is not None:
            out.append(Revive(slice=view.slice, unit=unit_id, decision=unit.retry_decision))
    return out


def _completions(view: SliceView) -> list[Complete]:
    # A discarded slice's units are never retried: their entries complete as they ended.
    retrying = view.status != "discarded"
    return [
        Complete(slice=view.slice, unit=unit.unit, dispatch=unit.dispatches[-1])
        for unit_id in view.order
        if (unit := view.units[unit_id]).dispatches
        and unit.state in TERMINAL_STATES
        and not (retrying and awaiting_retry(unit))
        and unit.dispatches[-1] not in unit.completed
    ]


def settled_summary(view: SliceView) -> dict[str, list[str]]:
    """Units by how they ended: done, failed, lost, and blocked (never dispatched)."""
    out: dict[str, list[str]] = {"done": [], "failed": [], "lost": [], "blocked": []}
    for unit_id in view.order:
        unit = view.units[unit_id]
        if unit.state in TERMINAL_STATES:
            out[str(unit.state)].append(unit_id)
        elif is_settled(view, unit_id):
            out["blocked"].append(unit_id)
    return out


def waiting_on(view: SliceView) -> dict[str, str]:
    """unit -> what it is waiting on right now, in plain words (empty once terminal)."""
    group = current_group(view)
    out: dict[str, str] = {}
    for unit_id in view.order:
        unit = view.units[unit_id]
        if awaiting_retry(unit):
            out[unit_id] = "the dispatcher's retry decision"
            continue
        if unit.state in TERMINAL_STATES:
            out[unit_id] = ""
            continue
        failed = failed_blocker(view, unit_id)
        if unit.state == "blocked" and unit.block is not None:
            out[unit_id] = f"{unit.block.reason} {unit.block.subject}"
        elif failed is not None and not unit.dispatches:
            out[unit_id] = f"awaiting-dependency {failed} (ended {view.units[failed].state})"
        elif unit.dispatches:
            out[unit_id] = "its builder" if unit.state else "its builder to start"
        elif view.status != "open":
            out[unit_id] = f"nothing: slice {view.status}"
        elif group is not None and (unit.wave, unit.sub_wave) > group:
            pending = [b for b in unit.blocked_by if view.units[b].state != "done"]
            out[unit_id] = (
                f"dependencies {', '.join(pending)}"
                if pending
                else f"wave {group[0]}.{group[1]} to reach the barrier"
            )
        else:
            out[unit_id] = "capacity"
    return out
