"""``loopbus tail``: follow the log live, one readable line (or one JSON object) per event."""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from datetime import UTC, datetime, timedelta

import msgspec

from bus import Record, read
from loopbus.errors import UsageError
from loopbus.event_line import Palette, record_json, record_line
from loopbus.known import require_known
from loopbus.known_work import require_unit
from loopbus.settings import connection
from schemas import KINDS, PRODUCERS, project_subjects
from schemas.durations import parse_duration
from schemas.errors import InvalidValue
from schemas.ids import is_token
from schemas.subjects import ALL as ALL_SUBJECTS
from schemas.subjects import finding_subjects

_json = msgspec.json.Encoder()


class Filter:
    """Which records to show; built from the command line, applied per record."""

    def __init__(self, args: argparse.Namespace):
        if args.project is not None and not is_token(args.project):
            raise UsageError(f"--project {args.project!r} is not a valid project id")
        if args.producer is not None and args.producer not in PRODUCERS:
            raise UsageError(f"--producer {args.producer!r} is not one of: {', '.join(PRODUCERS)}")
        if args.unit is not None and not is_token(args.unit):
            raise UsageError(f"--unit {args.unit!r} is not a valid unit id")
        if args.kind is not None and not any(kind_matches(args.kind, k) for k in KINDS):
            families = sorted({k.split(".")[0] for k in KINDS})
            raise UsageError(
                f"--kind {args.kind!r} matches no event kind; families: {', '.join(families)}"
            )
        self.project = args.project
        self.producer = args.producer
        self.unit = args.unit
        self.kind = args.kind

    def subjects(self) -> list[str]:
        if self.producer:
            return [finding_subjects(self.project or "*", self.producer)]
        if self.project:
            return [project_subjects(self.project)]
        return [ALL_SUBJECTS]

    def accepts(self, record: Record) -> bool:
        event = record.event
        if event is None:
            return self.kind is None and self.unit is None
        if self.kind is not None and not kind_matches(self.kind, event.kind):
            return False
        if self.unit is not None and getattr(event, "unit", None) != self.unit:
            return False
        return self.producer is None or getattr(event, "producer", None) == self.producer


def kind_matches(wanted: str, kind: str) -> bool:
    """``finding`` matches ``finding.raised.v1``: a prefix, a dotted component, or the tag."""
    return kind == wanted or kind.startswith(f"{wanted}.") or wanted in kind.split(".")


_SEQ = re.compile(r"^\d+\Z")


def parse_since(text: str | None, now: datetime | None = None) -> tuple[int, datetime | None]:
    """``(start_seq, start_time)`` for ``--since``: a sequence, a duration ago, or a time."""
    if text is None:
        return 1, None
    if _SEQ.match(text):
        return max(int(text), 1), None
    try:
        ago = parse_duration(text, "--since")
        return 1, (now or datetime.now(UTC)) - timedelta(seconds=ago)
    except InvalidValue:
        pass
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(
            f"--since {text!r} is not a sequence number, a duration (10m, 2h) or an ISO time"
        ) from None
    return 1, when if when.tzinfo else when.replace(tzinfo=UTC)


def emit(record: Record, as_json: bool, paint: Palette, show_project: bool) -> None:
    if as_json:  # every JSON object carries its project already
        sys.stdout.write(_json.encode(record_json(record)).decode() + "\n")
    else:
        sys.stdout.write(record_line(record, paint, show_project) + "\n")
    sys.stdout.flush()


def run(args: argparse.Namespace) -> int:
    chosen = Filter(args)
    start_seq, start_time = parse_since(args.since)
    paint = Palette.for_stream(sys.stdout)

    async def follow() -> int:
        bus = await connection(args).open()
        try:
            if chosen.project is not None:
                await require_known(bus, chosen.project)
                if chosen.unit is not None:
                    # A mistyped unit would print nothing (or wait forever when following);
                    # a planned unit with no events yet is followed as asked.
                    await require_unit(bus, chosen.project, chosen.unit)
            async for record in read(
                bus,
                subjects=chosen.subjects(),
                start_seq=start_seq,
                start_time=start_time,
                follow=not args.no_follow,
            ):
                if chosen.accepts(record):
                    emit(record, args.json, paint, show_project=chosen.project is None)
        finally:
            await bus.close()
        return 0

    # Ctrl-C is how a followed tail ends: it reaches the CLI, which exits 130 like any
    # interrupted command.
    return asyncio.run(follow())
