"""Refusing a project nobody has heard of: a mistyped ``--project`` is one line, exit 2.

A project exists once it has an event on the log. Reading commands (``status``,
``replay``) would otherwise show a mistyped project as a plausible empty state, and
writing ones (``plan submit``) would append to the permanent log under the typo. A new
project's first plan says so with ``--new``.
"""

from __future__ import annotations

from loopbus.bus import Bus, read
from loopbus.errors import UsageError
from loopbus.schemas import project_subjects


async def has_events(bus: Bus, project: str) -> bool:
    """True when the log holds at least one event of ``project``."""
    async for _record in read(bus, subjects=[project_subjects(project)]):
        return True
    return False


async def require_known(bus: Bus, project: str, *, hint: str = "") -> None:
    """Raise the one-line :class:`UsageError` when ``project`` has no event on the log."""
    if not await has_events(bus, project):
        raise UsageError(
            f"--project {project!r} has no event on the log: check the id"
            + (f" ({hint})" if hint else "")
        )
