"""The ``lessons_across`` projection: lesson classes recorded in more than one project.

The lessons daemon folds every project's ``slice.lessons_recorded.v1`` (and every lesson
gate's ``gate.proposed.v1``) into one aggregate state as well, the catalogue's (as the
ratchet counts declaring slices across projects). A class recorded in two projects or more
drafts its gate in each of them where it does not recur on its own (there the project's
own recurrence drafts it: :func:`projections.lessons.recurring`). Claimed lessons
never count, as in a project.
"""

import msgspec

from projections.base import Fold
from projections.lessons import gate_id
from schemas import Event
from schemas.lessons import Lesson, LessonsRecorded
from schemas.ratchet import GateProposed

AT_LEAST_PROJECTS = 2


class Seen(msgspec.Struct, kw_only=True):
    """Where one project recorded a class: its slices, its latest record and lesson."""

    slices: list[str] = []
    record: str = ""
    latest: Lesson | None = None


class Across(msgspec.Struct, kw_only=True):
    projects: dict[str, Seen] = {}


class AcrossState(msgspec.Struct):
    classes: dict[str, Across] = {}
    drafted: list[str] = []
    """``<project>/<gate>`` of every lesson gate proposed (by either recurrence)."""


def apply(state: AcrossState, event: Event) -> AcrossState:
    match event:
        case LessonsRecorded():
            for lesson in event.lessons:
                if lesson.claimed or not lesson.check:
                    continue  # an agent's word, or nothing a gate could run
                seen = state.classes.setdefault(lesson.cls, Across())
                where = seen.projects.setdefault(event.project, Seen())
                if event.slice not in where.slices:
                    where.slices.append(event.slice)
                where.record, where.latest = event.id, lesson
        case GateProposed():
            key = f"{event.project}/{event.gate}"
            if key not in state.drafted:
                state.drafted.append(key)
    return state


FOLD = Fold(name="lessons_across", state_type=AcrossState, initial=AcrossState, apply=apply)


def to_draft(state: AcrossState, at_least: int = AT_LEAST_PROJECTS) -> list[tuple[str, str, Seen]]:
    """(class, project, what that project saw) for each project a cross-project class
    should draft its gate in: recorded in ``at_least`` projects, not recurring within
    this one (its own recurrence drafts it there), not drafted there yet."""
    out: list[tuple[str, str, Seen]] = []
    for cls, across in sorted(state.classes.items()):
        if len(across.projects) < at_least:
            continue
        for project, seen in sorted(across.projects.items()):
            if len(seen.slices) >= 2 or f"{project}/{gate_id(cls)}" in state.drafted:
                continue
            out.append((cls, project, seen))
    return out
