"""``loopbus findings export``: a project's findings as SARIF 2.1.0, for code scanning.

The findings are folded from the log from sequence 1 (as ``replay`` folds it, with the
``findings`` projection itself), not read from the projector's view, so the export is the
log's own account. ``--for github`` (the default) also checks GitHub code scanning's
upload limits and refuses an export GitHub would reject; see docs/sarif.md.

Exit status: 0 written, 1 refused (over a limit) or no server, 2 usage.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from loopbus import findings_ledger, sarif
from loopbus.errors import LoopbusError, UsageError
from loopbus.findings_ledger import Entry, FindingsLedger
from loopbus.known import require_known
from loopbus.log_reading import project_records
from loopbus.progress import Progress
from loopbus.sarif_limits import GITHUB, check
from loopbus.settings import CONFIG_FILE, Connection, connection
from schemas import SEVERITIES
from schemas.ids import is_token


def run_export(args: argparse.Namespace) -> int:
    if not is_token(args.project):
        raise UsageError(f"--project {args.project!r} is not a valid project id")
    # A string, not a Path: Path("") is ".", which was then "Device or resource busy".
    if args.output is not None and not args.output.strip():
        raise UsageError(
            f"-o {args.output!r} is empty: name the file to write, or leave -o out for stdout"
        )
    if args.output is not None and Path(args.output).is_dir():
        raise UsageError(
            f"-o {args.output!r} is a directory: name a file in it (e.g. -o "
            f"{Path(args.output) / 'findings.sarif'}), or leave -o out for stdout"
        )
    anchor = _anchor(args.anchor) if args.consumer == "github" else None
    ledger = asyncio.run(fold(connection(args), args.project))
    floor = SEVERITIES.index(args.min_severity)
    entries = [
        e
        for e in findings_ledger.entries(ledger, closed=args.scope == "all")
        if SEVERITIES.index(e.finding.severity) >= floor
    ]
    from loopbus.cli import version

    document = sarif.document(entries, sarif.Export(args.project, version(), anchor))
    data = (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()
    if args.consumer == "github":
        _within_github(document, data, entries)
    if args.output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return 0
    _write(Path(args.output), data)
    rules = len(document["runs"][0]["tool"]["driver"]["rules"])
    print(f"wrote {len(entries)} results ({rules} rules) of {args.project} to {args.output}")
    return 0


def _anchor(text: str) -> str:
    path = PurePosixPath(text)
    if not text or path.is_absolute() or ".." in path.parts:
        raise UsageError(
            f"--anchor {text!r} must be a file path relative to the repository root, "
            f"e.g. {CONFIG_FILE}"
        )
    return str(path)


async def fold(conn: Connection, project: str) -> FindingsLedger:
    """The project's findings ledger, folded from sequence 1 of the log."""
    bus = await conn.open()
    ledger = findings_ledger.initial()
    progress = Progress(f"findings of {project}", unit="seq")
    try:
        await require_known(bus, project)
        with progress.shown():
            async for record in project_records(bus, project, progress):
                if record.event is not None:
                    findings_ledger.apply(ledger, record.event)
    finally:
        await bus.close()
    return ledger


def _within_github(document: dict[str, Any], data: bytes, entries: list[Entry]) -> None:
    verdict = check(document, data, GITHUB)
    if verdict.problems:
        raise LoopbusError(
            f"not written: {GITHUB.service} would reject it ({'; '.join(verdict.problems)}); "
            "export fewer findings (--open, --min-severity high), or pass --for sarif "
            "for another consumer"
        )
    for note in verdict.notes:
        print(f"loopbus: note: {note}", file=sys.stderr)
    closed = sum(1 for e in entries if e.status != "open")
    if closed:
        print(
            f"loopbus: note: {closed} closed findings are written with a suppression, which "
            f"{GITHUB.service} does not read (it would show them as open alerts); upload an "
            "--open export there",
            file=sys.stderr,
        )


def _write(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all: a reader never sees half a SARIF file."""
    try:
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise _unwritable(path, exc) from exc
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise _unwritable(path, exc) from exc


def _unwritable(path: Path, exc: OSError) -> UsageError:
    return UsageError(
        f"-o {str(path)!r} cannot be written ({exc.strerror or exc}); pass a file in a "
        "directory you can write to"
    )
