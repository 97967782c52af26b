"""``loopbus replay``: fold the whole log from sequence 1 with the same folds the projector
runs, and show the state and the events that produced it — the audit of any decision.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from datetime import UTC, datetime

import msgspec

from bus import Record
from loopbus.errors import UsageError
from loopbus.event_line import record_line
from loopbus.known import require_known
from loopbus.log_reading import project_records
from loopbus.progress import Progress
from loopbus.render import Palette, record_json, render_state
from loopbus.settings import Connection, connection
from projections import ProjectStates, apply_all, initial_states, to_builtins
from schemas.ids import is_token

_json = msgspec.json.Encoder()


def parse_until(text: str | None) -> tuple[int | None, datetime | None]:
    if text is None:
        return None, None
    if re.fullmatch(r"\d+", text):
        return int(text), None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(
            f"--until {text!r} is neither a stream sequence nor an ISO time "
            "(e.g. 42 or 2026-11-30T10:00:00Z)"
        ) from None
    return None, when if when.tzinfo else when.replace(tzinfo=UTC)


async def replay(
    conn: Connection, project: str, until_seq: int | None, until_time: datetime | None
) -> tuple[list[Record], ProjectStates]:
    """The records of ``project`` up to the bound, and the states they fold into."""
    bus = await conn.open()
    records: list[Record] = []
    states = initial_states()
    progress = Progress(f"replay {project}", unit="seq")
    try:
        await require_known(bus, project)
        with progress.shown():
            async for record in project_records(
                bus, project, progress, until_seq=until_seq, until_time=until_time
            ):
                records.append(record)
                if record.event is not None:
                    apply_all(states, record.event)
    finally:
        await bus.close()
    return records, states


def run(args: argparse.Namespace) -> int:
    if not is_token(args.project):
        raise UsageError(f"--project {args.project!r} is not a valid project id")
    until_seq, until_time = parse_until(args.until)
    records, states = asyncio.run(replay(connection(args), args.project, until_seq, until_time))
    if args.json:
        document = {
            "project": args.project,
            "last_seq": records[-1].seq if records else 0,
            "events": [] if args.state_only else [record_json(r) for r in records],
            "state": {name: to_builtins(state) for name, state in states.items()},
        }
        sys.stdout.write(_json.encode(document).decode() + "\n")
        return 0
    paint = Palette.for_stream(sys.stdout)
    if not args.state_only:
        print(f"events of {args.project}: {len(records)}")
        for record in records:
            print(record_line(record, paint))
        print()
    bound = f" through seq {records[-1].seq}" if records else " (no events)"
    print(f"state of {args.project}{bound}:")
    for name, state in states.items():
        for line in render_state(name, state, states=states):
            print(f"  {line}")
    return 0
