"""``loopbus report risk SLICE``: a slice's inverted risk report, from the log.

It sits under ``report`` because the issue asks for ``loopbus report SLICE``; a bare slice id
there would be ambiguous with the claim kinds (``report finding``, ``report started`` …, a
slice may well be called ``finding``), so the reading is the kind ``risk``. Unlike its
siblings it publishes nothing: it folds the log (:mod:`projections.risk`) and, with
``--repo``, reads which files each configured check reads from trunk's ``loopbus.toml``
(dulwich is imported only then, so a report without a repository starts as lightly as
``status``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

from bus import read
from loopbus.errors import UsageError
from loopbus.known import require_known
from loopbus.settings import Connection, connection
from loopbus.terminal_text import say
from projections import risk, slices
from projections.risk import RiskState
from projections.slices import SlicesState
from schemas import project_subjects
from schemas.ids import is_token

_json = msgspec.json.Encoder()


async def fold_risk(conn: Connection, project: str) -> tuple[SlicesState, RiskState]:
    """The slices and risk projections of ``project``, folded from sequence 1 of the log."""
    bus = await conn.open()
    try:
        await require_known(bus, project)
        views, state = slices.initial(), risk.initial()
        async for record in read(bus, subjects=[project_subjects(project)]):
            if record.event is not None:
                slices.apply(views, record.event)
                risk.apply(state, record.event)
    finally:
        await bus.close()
    return views, state


def configured_reads(repo: Path, trunk: str) -> Mapping[str, Sequence[str]] | None:
    """Check id -> the paths it reads, from ``trunk``'s ``loopbus.toml`` (``None``: unreadable)."""
    from workers import repository
    from workers.errors import WorkerError
    from workers.gates.declared import config_at

    try:
        config = config_at(repository.resolve(repo, trunk))
    except WorkerError:
        return None
    return {spec.id: spec.reads for spec in config.checks}


def run(args: argparse.Namespace) -> int:
    if not is_token(args.project):
        raise UsageError(f"--project {args.project!r} is not a valid project id")
    if not is_token(args.slice):
        raise UsageError(f"SLICE {args.slice!r} is not a valid slice id")
    views, state = asyncio.run(fold_risk(connection(args), args.project))
    if args.slice not in views.slices:
        known = ", ".join(sorted(views.slices)) or "none yet"
        raise UsageError(f"SLICE {args.slice}: no such slice in {args.project} (known: {known})")
    if args.repo is not None and not args.repo.is_dir():
        raise UsageError(f"--repo {args.repo}: no such directory (give the project's repository)")
    checks = configured_reads(args.repo, args.trunk) if args.repo is not None else None
    items = risk.report(views, state, args.slice, checks)
    if args.json:
        sys.stdout.write(_json.encode(items).decode() + "\n")
        return 0
    say(f"# Risk report of slice {args.slice} ({args.project}), least verified first")
    say()
    for line in risk.render(items):
        say(line)
    return 0
