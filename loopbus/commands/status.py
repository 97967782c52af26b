"""``loopbus status``: the projector's materialised view of a project, read instantly from KV."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import msgspec

from loopbus import review_status, units_status
from loopbus.bus import Views, ViewUnreadable, connect_once
from loopbus.errors import UsageError
from loopbus.known import require_known
from loopbus.projections import FOLDS, to_builtins
from loopbus.render import render_state
from loopbus.schemas.ids import is_token
from loopbus.settings import add_connection, add_project, nats_url

_json = msgspec.json.Encoder()


def register(sub: Any) -> None:
    parser = sub.add_parser("status", help="the current state, from the materialised view")
    add_connection(parser)
    add_project(parser)
    parser.add_argument("--json", action="store_true", help="one JSON document")
    parser.add_argument(
        "--waiting",
        action="store_true",
        help="only what the run is waiting on: blocked units grouped by subject",
    )
    parser.add_argument(
        "--unit", default=None, help="one unit: its rounds, finding sets, verdict and rung"
    )
    parser.set_defaults(handler=run)


async def load_view(url: str, project: str) -> tuple[dict[str, Any], dict[str, int], int, int]:
    """(states by projection, seq of each, projector checkpoint, log's last seq)."""
    bus = await connect_once(url)
    try:
        await require_known(bus, project)
        views = await Views.open(bus)
        states: dict[str, Any] = {}
        seqs: dict[str, int] = {}
        for fold in FOLDS:
            try:
                stored = await views.read(project, fold)
            except ViewUnreadable:
                stored = None  # the projector is rebuilding it; nothing to show yet
            seqs[fold.name], states[fold.name] = stored if stored else (0, fold.initial())
        checkpoint = await views.checkpoint()
        last = await bus.stream_last_seq()
    finally:
        await bus.close()
    return states, seqs, checkpoint, last


def run(args: argparse.Namespace) -> int:
    if not is_token(args.project):
        raise UsageError(f"--project {args.project!r} is not a valid project id")
    states, seqs, checkpoint, last = asyncio.run(load_view(nats_url(args), args.project))
    if args.unit is not None:
        return review_status.print_unit(args.project, args.unit, states, as_json=args.json)
    if args.waiting:
        return units_status.print_waiting(args.project, states["units"], as_json=args.json)
    if args.json:
        document = {
            "project": args.project,
            "projector_checkpoint": checkpoint,
            "log_last_seq": last,
            "seq": seqs,
            "state": {name: to_builtins(state) for name, state in states.items()},
        }
        sys.stdout.write(_json.encode(document).decode() + "\n")
        return 0
    lag = "" if checkpoint >= last else f" (projector behind: {last - checkpoint} to fold)"
    print(f"status of {args.project}, projector at seq {checkpoint} of {last}{lag}:")
    for name, state in states.items():
        for line in render_state(name, state):
            print(f"  {line}")
    return 0
