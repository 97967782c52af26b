"""The run as the log says it: folded here for ``charter show``, ``run`` and ``status``.

The CLI folds the project's log with the same ``charter`` fold the daemons keep, so what
it prints is what the dispatcher and the charter daemon decide on (forgeries skipped).
"""

from __future__ import annotations

import sys

import msgspec

from bus import Bus, read
from loopbus.charter_render import charter_lines, run_document, run_lines
from projections import charter as charter_fold
from projections.charter import RunView
from schemas.subjects import project_subjects


async def load_run(bus: Bus, project: str) -> RunView:
    """The ``charter`` fold of ``project``'s whole log."""
    view = charter_fold.FOLD.initial()
    async for record in read(bus, subjects=[project_subjects(project)]):
        if record.event is not None:
            view = charter_fold.FOLD.apply(view, record.event)
    return view


def print_json(document: object) -> None:
    """``--json``: one document on one line."""
    sys.stdout.write(msgspec.json.encode(document).decode() + "\n")


__all__ = ["charter_lines", "load_run", "print_json", "run_document", "run_lines"]
