"""``loopbus record``: the run record, derived from the log alone.

One entry per unit per dispatch: the heading is the dispatch (``UnitDispatched``, written
the moment the unit entered its wave) and the lines under it are the completion the
dispatcher wrote when the unit reached the TERMINAL barrier (``RunEntryCompleted``):
what ended it, the commands the system ran with their real outcomes, the files changed,
and what was not run and why. A heading with nothing under it is a unit that was
dispatched and never came back. Both halves are facts on an immutable log, so the record
can be read, never edited.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import msgspec

from bus import read
from loopbus.errors import UsageError
from loopbus.known import require_known
from loopbus.settings import Connection, connection
from loopbus.slice_render import record_json, render_record
from loopbus.terminal_text import say
from projections import slices
from projections.slices import SlicesState
from schemas import project_subjects
from schemas.ids import is_token

_json = msgspec.json.Encoder()


async def fold_slices(conn: Connection, project: str) -> SlicesState:
    """The slices projection of ``project``, folded from sequence 1 of the log."""
    bus = await conn.open()
    try:
        await require_known(bus, project)
        state = slices.initial()
        async for record in read(bus, subjects=[project_subjects(project)]):
            if record.event is not None:
                slices.apply(state, record.event)
    finally:
        await bus.close()
    return state


def run(args: argparse.Namespace) -> int:
    if not is_token(args.project):
        raise UsageError(f"--project {args.project!r} is not a valid project id")
    if args.slice is not None and not is_token(args.slice):
        raise UsageError(f"--slice {args.slice!r} is not a valid slice id")
    state = asyncio.run(fold_slices(connection(args), args.project))
    if args.slice is not None and args.slice not in state.slices:
        known = ", ".join(sorted(state.slices)) or "none yet"
        raise UsageError(f"--slice {args.slice}: no such slice in {args.project} (known: {known})")
    if args.json:
        sys.stdout.write(_json.encode(record_json(state, args.slice)).decode() + "\n")
        return 0
    scope = f", slice {args.slice}" if args.slice else ""
    say(f"# Run record of {args.project}{scope}")
    say()
    lines = render_record(state, args.slice)
    if not lines:
        say("(no unit has been dispatched)")
    for line in lines:
        say(line)
    return 0
