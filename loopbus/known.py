"""Refusing a project nobody has heard of: a mistyped ``--project`` is one line, exit 2.

A project exists once it has an event on the log. Reading commands (``status``,
``replay``) would otherwise show a mistyped project as a plausible empty state, and
writing ones (``plan submit``) would append to the permanent log under the typo. A new
project's first plan says so with ``--new``; so may the other commands that can open a
project (an operator's first finding, decision or objective). ``--new`` naming a project
that already has events is refused the same way. Every other command that
names a project (reports about units, ``tail``, ``approve``, ``findings export``) refuses
one with no event, saying how a project starts.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from loopbus.errors import UsageError
from schemas.subjects import project_subjects

if TYPE_CHECKING:  # commands register --new from here before anything connects
    from bus import Bus, Record


async def has_events(bus: Bus, project: str) -> bool:
    """True when the log holds at least one event of ``project``."""
    return await first_record(bus, project) is not None


async def first_record(bus: Bus, project: str) -> Record | None:
    """The first record of ``project`` on the log (``None``: it has none)."""
    from bus import read

    async for record in read(bus, subjects=[project_subjects(project)]):
        return record
    return None


START_HINT = "a project starts with `loopbus plan submit PLAN --project ID --new`"
NEW_HINT = "if it is a new project, pass --new"


def add_new(parser: Any, what: str) -> None:
    """``--new``: ``what`` is the project's first event, so it may have none yet."""
    parser.add_argument(
        "--new", action="store_true", help=f"a new project: {what} may be its first event"
    )


async def require_known(bus: Bus, project: str, *, hint: str = START_HINT) -> None:
    """Raise the one-line :class:`UsageError` when ``project`` has no event on the log."""
    if not await has_events(bus, project):
        raise UsageError(
            f"--project {project!r} has no event on the log: check the id"
            + (f" ({hint})" if hint else "")
        )


async def require_new(bus: Bus, project: str) -> None:
    """Raise the one-line :class:`UsageError` when ``project`` said to be new (``--new``)
    already has events: a reused id would mix a new project into an old one's log."""
    first = await first_record(bus, project)
    if first is not None:
        # Naming the first event says who opened it: often `loopbus up --repo`, which
        # adopts trunk's loopbus.toml before any plan.
        what = first.event.kind if first.event is not None else "an undecodable message"
        who = f" by {first.event.actor.role}:{first.event.actor.principal}" if first.event else ""
        raise UsageError(
            f"--new: project {project!r} already has events on the log (the first: {what}"
            f"{who}, seq {first.seq}); drop --new to add to it, or give a new project an id "
            "of its own"
        )


async def require_known_unless_new(bus: Bus, args: argparse.Namespace) -> None:
    """:func:`require_known` for a command that takes ``--new``; with it given,
    :func:`require_new`."""
    if getattr(args, "new", False):
        await require_new(bus, args.project)
    else:
        await require_known(bus, args.project, hint=NEW_HINT)
