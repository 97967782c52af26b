"""The run record's completion of one dispatch: what ran, what changed, what did not run.

Pure: built from the ``slices`` fold and from what the shell read from the repository
for the unit (:class:`UnitReads`: the commands configured at the unit's head and the files
that differ from its base), so the same entry comes out of a replay.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from projections.slice_dispatch import Complete
from projections.slices import SliceUnit, SliceView
from schemas.ids import answer_id
from schemas.slices import CommandRun, NotRun, RunEntryCompleted
from workers.kernel import World


@dataclass(frozen=True)
class UnitReads:
    """What the repository said about a unit: check id -> command as configured at its
    head (empty when unread), the files changed from base to head, or why those are not
    known (``files_unknown``)."""

    configured: Mapping[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    files_unknown: str | None = None
    lines: int | None = None
    """Added plus removed lines from the unit's own base to its head (``None``: unknown)."""


def completion(
    world: World, view: SliceView, action: Complete, reads: UnitReads
) -> RunEntryCompleted:
    """The completion of ``action.dispatch`` for a unit that reached the TERMINAL barrier."""
    unit = view.units[action.unit]
    state = unit.state
    assert state in ("done", "failed", "lost")  # next_actions completes terminal units only
    commands = [
        CommandRun(
            check=c.check,
            command=reads.configured.get(c.check, c.command),
            outcome=c.outcome,
            duration_s=c.duration_s,
            cached=c.cached,
            tree=c.tree,
            detail=c.detail,
            commit=c.commit,
        )
        for c in unit.commands
    ]
    return RunEntryCompleted(
        id=answer_id(action.dispatch, "entry-completed"),
        project=world.project,
        actor=world.actor,
        at=world.now,
        slice=view.slice,
        unit=action.unit,
        dispatch=action.dispatch,
        state=state,
        ended_by=unit.ended_by,
        summary=unit.summary,
        commands=commands,
        files_changed=reads.files if reads.files_unknown is None else [],
        not_run=not_run(unit, state, commands, reads),
        returned_nothing=unit.returned == 0,
        cause=unit.last_event,
        lines_changed=reads.lines if reads.files_unknown is None else None,
        head=unit.head,
    )


def not_run(
    unit: SliceUnit, state: str, commands: list[CommandRun], reads: UnitReads
) -> list[NotRun]:
    """Everything the unit's entry must say did not happen: gates, checks configured but
    never run, review and merge of a unit that failed, files changed that cannot be told."""
    missing: list[NotRun] = []
    if unit.head is None:
        missing.append(
            NotRun(what="gates", why=f"no commit was submitted before the unit ended {state}")
        )
    elif not commands and not unit.suite_errors:
        missing.append(
            NotRun(
                what="gates",
                why=f"no gate suite ran on {unit.head[:12]} before the unit ended {state}",
            )
        )
    for error in unit.suite_errors:
        missing.append(NotRun(what="gate suite", why=f"could not run: {error}"))
    ran = {c.check for c in commands}
    for check in reads.configured:
        if commands and check not in ran:
            missing.append(NotRun(what=check, why="in loopbus.toml but in no suite run"))
    if state != "done":
        if unit.reviews == 0:
            missing.append(NotRun(what="review", why=f"the unit ended {state} before any review"))
        missing.append(NotRun(what="merge", why=f"the unit ended {state}; nothing merged"))
    if reads.files_unknown is not None:
        missing.append(NotRun(what="files changed", why=reads.files_unknown))
    return missing
