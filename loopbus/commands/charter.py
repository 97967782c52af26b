"""``loopbus charter submit FILE`` and ``loopbus charter show``.

A charter says what a run is for (objectives), how the system knows it is done (criteria
judged on trunk: a check that passed, a test that ran and passed) and what it may spend
(wall clock, tokens, slices). Submitting one publishes an operator's claim; nothing is
planned or dispatched under it until ``loopbus approve --charter`` (docs/charter.md).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from loopbus.charter_file import parse_charter
from loopbus.claiming import publish_claim
from loopbus.commands.report import principal, token
from loopbus.errors import UsageError
from loopbus.known import require_known, require_known_unless_new
from loopbus.run_view import charter_lines, load_run, print_json, run_document, run_lines
from loopbus.settings import connection
from loopbus.terminal_text import one_line
from schemas import Actor
from schemas.charter import CharterSubmission
from schemas.subjects import subject_of


def read_file(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"FILE {path!r}: cannot be read ({exc}); name a charter file") from exc


def run_submit(args: argparse.Namespace) -> int:
    charter = parse_charter(read_file(args.file), args.file)
    if args.check:
        print("\n".join(one_line(line) for line in charter_lines(charter, "charter stands")))
        return 0
    claim = CharterSubmission(
        project=token("--project", args.project),
        actor=Actor(role="operator", principal=principal(args)),
        charter=charter,
    )

    async def publish() -> int:
        bus = await connection(args).open()
        try:
            bus.check_publish(subject_of(claim))  # a credential that may not submit: say so
            await require_known_unless_new(bus, args)
            ack = await publish_claim(bus, claim)
        finally:
            await bus.close()
        print(
            f"charter {charter.id} submitted as {claim.id} at seq {ack.seq}; it awaits "
            f"approval: loopbus approve --charter {charter.id} --why '...'"
        )
        return 0

    return asyncio.run(publish())


def run_show(args: argparse.Namespace) -> int:
    project = token("--project", args.project)

    async def show() -> int:
        bus = await connection(args).open()
        try:
            await require_known(bus, project)
            view = await load_run(bus, project)
        finally:
            await bus.close()
        if args.json:
            print_json(run_document(project, view))
        else:
            print("\n".join(one_line(line) for line in run_lines(view)))
        return 0

    return asyncio.run(show())
