"""``loopbus status``: the projector's materialised view of a project, read instantly from KV.

It reads each projection's summary and at most ``--limit`` entries of each of its
collections (a project with 100,000 open findings answers as fast as one with ten): the
counts come from the summaries, and a collection shown only in part says how much is left
out. ``--unit U`` reads only that unit's entries; ``--waiting`` reads every unit.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass, field
from typing import Any

import msgspec

from bus import Bus, Views, ViewUnreadable
from loopbus import review_status, units_status
from loopbus.commands.status_args import DEFAULT_LIMIT
from loopbus.errors import UsageError
from loopbus.known import require_known
from loopbus.render import render_state
from loopbus.settings import Connection, connection
from projections import FOLDS, to_builtins
from projections import blocking as blocking_fold
from projections import builds as builds_fold
from projections import convergence as convergence_fold
from projections import findings as findings_fold
from projections import units as units_fold
from schemas.ids import is_token
from schemas.subjects import project_subjects

_json = msgspec.json.Encoder()


@dataclass
class ProjectView:
    """What ``status`` read: each projection's (possibly partial) state and its sizes."""

    states: dict[str, Any]
    seqs: dict[str, int]
    checkpoint: int
    last: int
    sizes: dict[str, dict[str, int]] = field(default_factory=dict)
    """Projection -> field path -> entries it holds (from the summaries)."""
    partial: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)
    """Projection -> field path -> (shown, total), for collections shown in part."""


async def load_view(
    conn: Connection, project: str, limit: int | None = DEFAULT_LIMIT
) -> ProjectView:
    """Every projection of ``project`` as the projector last wrote it."""
    bus = await conn.open()
    try:
        await require_known(bus, project)
        views = await Views.open(bus)
        found = await views.read_project(project, FOLDS, limit=limit)
        view = ProjectView(states={}, seqs={}, checkpoint=(await views.checkpoint()).seq, last=0)
        for fold in FOLDS:
            if fold.name in found:
                state, assembled = found[fold.name]
                view.states[fold.name], view.seqs[fold.name] = state, assembled.seq
                view.sizes[fold.name] = assembled.sizes
                if assembled.partial:
                    view.partial[fold.name] = assembled.partial
            else:  # never written (or being rebuilt): nothing to show yet
                view.states[fold.name], view.seqs[fold.name] = fold.initial(), 0
        view.last = await bus.stream_last_seq()
    finally:
        await bus.close()
    return view


async def load_unit(conn: Connection, project: str, unit: str, limit: int | None) -> dict[str, Any]:
    """The units, convergence, findings and builds states holding only ``unit``'s entries
    (and, when it is unknown, up to ``limit`` other units to name, and under
    ``review_status.BEHIND`` how far the projector has folded when it has not yet
    reached the project's last event)."""
    bus = await conn.open()
    try:
        await require_known(bus, project)
        views = await Views.open(bus)
        states: dict[str, Any] = {}
        wanted = (
            (units_fold.FOLD, ("units", unit)),
            (convergence_fold.FOLD, ("units", unit)),
            (findings_fold.FOLD, ("open", unit)),
            # The decisions waiting on the operator, with their trade-off table.
            (builds_fold.FOLD, ("units", unit)),
        )
        for fold, path in wanted:
            states[fold.name] = await _entries(views, project, fold, path)
        if unit not in states["units"].units and unit not in states["convergence"].units:
            states["units"] = await _page(bus, views, project, limit)
            # Not found may only mean not folded yet: say how far the projector is.
            folded = (await views.checkpoint()).seq
            last = await bus.last_subject_seq(project_subjects(project))
            if folded < last:
                states[review_status.BEHIND] = (folded, last)
    finally:
        await bus.close()
    return states


async def _entries(views: Views, project: str, fold: Any, path: tuple[str, ...]) -> Any:
    try:
        found = await views.read_entries(project, fold, [path])
    except ViewUnreadable:
        found = None
    return found[0] if found is not None else fold.initial()


async def _page(bus: Bus, views: Views, project: str, limit: int | None) -> Any:
    try:
        found = await views.read(project, units_fold.FOLD, limit=limit)
    except ViewUnreadable:
        found = None
    return found[0] if found is not None else units_fold.initial()


async def load_waiting(conn: Connection, project: str) -> tuple[Any, Any]:
    """Every unit (``--waiting`` groups all blocked units) and the open blocked-by-fact
    findings holding units back."""
    bus = await conn.open()
    try:
        await require_known(bus, project)
        views = await Views.open(bus)
        units = await _page(bus, views, project, None)
        try:
            found = await views.read(project, blocking_fold.FOLD, limit=None)
        except ViewUnreadable:
            found = None
        return units, found[0] if found is not None else blocking_fold.FOLD.initial()
    finally:
        await bus.close()


def run(args: argparse.Namespace) -> int:
    if not is_token(args.project):
        raise UsageError(f"--project {args.project!r} is not a valid project id")
    if args.limit < 0:
        raise UsageError(f"--limit {args.limit} is negative: give a count, or 0 for everything")
    limit = args.limit or None
    if args.unit is not None:
        states = asyncio.run(load_unit(connection(args), args.project, args.unit, limit))
        return review_status.print_unit(args.project, args.unit, states, as_json=args.json)
    if args.waiting:
        units, blocking = asyncio.run(load_waiting(connection(args), args.project))
        return units_status.print_waiting(args.project, units, as_json=args.json, blocked=blocking)
    view = asyncio.run(load_view(connection(args), args.project, limit))
    if args.json:
        document: dict[str, Any] = {
            "project": args.project,
            "projector_checkpoint": view.checkpoint,
            "log_last_seq": view.last,
            "seq": view.seqs,
            "state": {name: to_builtins(state) for name, state in view.states.items()},
        }
        if view.partial:
            document["truncated"] = {
                name: {path: {"shown": s, "total": t} for path, (s, t) in paths.items()}
                for name, paths in view.partial.items()
            }
        sys.stdout.write(_json.encode(document).decode() + "\n")
        return 0
    behind = view.last - view.checkpoint
    lag = "" if behind <= 0 else f" (projector behind: {behind} to fold)"
    print(f"status of {args.project}, projector at seq {view.checkpoint} of {view.last}{lag}:")
    for name, state in view.states.items():
        for line in render_state(name, state, view.sizes.get(name, {}), view.states):
            print(f"  {line}")
        for path, (shown, total) in view.partial.get(name, {}).items():
            if not shown:
                continue  # a collection status reads as a count only: nothing was cut
            print(
                f"    … {total - shown} more of {name}.{path} not shown "
                f"({shown} of {total}; --limit 0 shows every one)"
            )
    return 0
