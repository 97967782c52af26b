"""What a view should hold and what KV holds: the partitioned view of a replay, and of a
bucket, value by value."""

from __future__ import annotations

import contextlib
from typing import Any

from bus import Bus, Record, TransitionConflict, Views, read
from bus.view_layout import VIEW_PREFIX, key_of, layout_of, pieces, view_prefix
from bus.views import RECENT_KEY
from projections import FOLDS, fold_events
from schemas import project_subjects
from workers.projector.core import Projector
from workers.projector.daemon import ProjectorDaemon


async def expected_view(bus: Bus, project: str, folds: tuple[Any, ...] = FOLDS) -> dict[str, bytes]:
    """Key -> value body (without its flush number) that a full replay from sequence 1 gives,
    cut the way the projector stores it."""
    records = [r async for r in read(bus, subjects=[project_subjects(project)])]
    events = [r.event for r in records if r.event is not None]
    seqs = [r.seq for r in records if r.event is not None]
    states = fold_events(events).get(project)
    assert states is not None
    found: dict[str, bytes] = {}
    for fold in folds:
        prefix = view_prefix(project, fold.name)
        for piece in pieces(layout_of(fold.state_type), states[fold.name], seqs[-1]):
            found[key_of(prefix, piece.tokens)] = piece.body
    return found


async def materialised(views: Views, project: str) -> dict[str, bytes]:
    """Key -> value body (without its flush number) of every live value of ``project``'s
    views in the bucket (a value stored in parts joined)."""
    found: dict[str, bytes] = {}
    for key, data in (await views.latest(f"{VIEW_PREFIX}.{project}.>")).items():
        if not key.endswith(f".{RECENT_KEY}"):  # the index status pages with: not a state
            comma = data.find(b",")
            found[key] = data[comma + 1 : -1]
    return found


async def apply(bus: Bus, projector: Projector, record: Record) -> None:
    """What the projector daemon does with one record: fold it, or quarantine it (the
    kernel carries the quarantine out as a publish conditional on an empty subject)."""
    if record.event is not None:
        projector.apply(record)
        return
    for intent in ProjectorDaemon(bus).undecodable(record):
        with contextlib.suppress(TransitionConflict):  # quarantined before a restart
            await bus.publish_transition(intent.event, intent.expected)  # type: ignore[union-attr]
