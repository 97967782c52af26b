"""The ``lessons`` projection: what failed during each slice, and which lessons recur.

While a slice runs, every failure the system established for one of its units becomes a
:class:`~schemas.lessons.Lesson`: a red check in a round's gate, a review that
blocked a round, a merge conflict, a red merge candidate or a revert of trunk, a
verifier's finding. Each is kept once per unit and class, with the round it was first
caught in. An investigation's finding becomes a lesson only as a claim (``claimed``).

When the slice closes its lessons are *due*; the lessons daemon records them
(``slice.lessons_recorded.v1``), and only recorded lessons are in force: they travel in
later briefs (:func:`in_force`) and, when one class recurs across slices, draft a gate
(:func:`recurring`). Nothing here reads an agent's word as a fact: the fold guard drops
forgeries and every source below is a system fact.

Closeout is tracked here too: a closed slice whose ``slice.closed_out.v1`` is not on the
log yet is :func:`to_close_out`.
"""

import hashlib
import re

import msgspec

from projections.base import Fold
from schemas import Event, FindingRaised
from schemas.contract import ContractLanded
from schemas.gates import GateSuiteCompleted
from schemas.lessons import Lesson, LessonsRecorded, SliceClosedOut
from schemas.merges import CandidateTested, FailingTest, MergeConflicted, MergeReverted
from schemas.ratchet import GateMoved, GateProposed
from schemas.reviews import RoundClosed
from schemas.slices import SliceClosed, UnitDispatched
from schemas.verify import VERIFY_CRITERION

RECUR_AT = 2
"""Slices a lesson class must recur in before it drafts a gate."""
MAX_BRIEF_LESSONS = 12
"""Lessons a brief carries at most (recurring first, then the most recent)."""
MAX_LINE = 300
LESSON_GATE_PREFIX = "lesson-"
NODE_ID = re.compile(r"[A-Za-z0-9_./-]+\.py(::[A-Za-z0-9_.-]+)*")
"""A pytest node id a drafted check may name (parametrised ids and anything else: none)."""


class Due(msgspec.Struct, kw_only=True):
    """A closed slice's lessons, computed at its close, not recorded yet."""

    closed: str
    lessons: list[Lesson] = []


class Recorded(msgspec.Struct, kw_only=True):
    id: str
    slice: str
    lessons: list[Lesson] = []


class Recurrence(msgspec.Struct, kw_only=True):
    """The slices a lesson class was recorded in (system lessons only), and its latest."""

    slices: list[str] = []
    records: list[str] = []
    latest: Lesson | None = None


class Closing(msgspec.Struct, kw_only=True):
    slice: str
    closed: str
    units: list[str] = []


class LessonsState(msgspec.Struct):
    slice_of: dict[str, str] = {}
    """Unit -> the slice that dispatched it (its latest dispatch)."""
    rounds: dict[str, int] = {}
    """Unit -> its last closed round."""
    running: dict[str, list[Lesson]] = {}
    """Slice -> its lessons so far (one per unit and class)."""
    checks: list[str] = []
    """Checks known to run in this project (a suite ran them, a contract or the ratchet
    added them): a review finding whose criterion names one was a gate's to catch."""
    due: dict[str, Due] = {}
    recorded: dict[str, Recorded] = {}
    order: list[str] = []
    """Recorded slices, oldest first."""
    recurring: dict[str, Recurrence] = {}
    drafted: list[str] = []
    """Gates a recurring lesson drafted already (``gate.proposed.v1`` of a lesson gate)."""
    closing: dict[str, Closing] = {}
    """Closed slices not closed out yet."""
    closed_out: dict[str, SliceClosedOut] = {}


def _known(state: LessonsState, check: str) -> None:
    if check and check not in state.checks:
        state.checks.append(check)


def _add(state: LessonsState, unit: str | None, lesson: Lesson) -> None:
    slice_id = state.slice_of.get(unit) if unit else None
    if slice_id is None or slice_id in state.due or slice_id in state.recorded:
        return  # not a unit of a running slice: nothing to learn for one
    found = state.running.setdefault(slice_id, [])
    if any(old.unit == lesson.unit and old.cls == lesson.cls for old in found):
        return  # caught again in a later round: the lesson is when it was first caught
    found.append(lesson)


def _round(state: LessonsState, unit: str | None) -> int:
    return state.rounds.get(unit, 0) if unit else 0


def apply(state: LessonsState, event: Event) -> LessonsState:
    match event:
        case UnitDispatched():
            state.slice_of[event.unit] = event.slice
        case GateSuiteCompleted():
            for entry in event.checks:
                _known(state, entry.check)
        case ContractLanded():
            for check in event.checks:
                _known(state, check)
        case GateMoved(scope="local", target=target) if target in ("Drafted", "Local"):
            _known(state, event.gate)
        case GateProposed():
            _known(state, event.gate)
            if event.investigation in {r.id for r in state.recorded.values()}:
                state.drafted.append(event.gate)
        case RoundClosed():
            state.rounds[event.unit] = max(event.round, state.rounds.get(event.unit, 0))
            if not event.passed:
                for lesson in _round_lessons(state, event):
                    _add(state, event.unit, lesson)
        case MergeConflicted():
            paths = ", ".join(sorted(event.paths)[:5])
            _add(
                state,
                event.unit,
                Lesson(
                    cls=f"merge-conflict:{paths}",
                    kind="merge-conflict",
                    what=f"{event.unit}'s head collided with trunk in {paths}",
                    unit=event.unit,
                    round=_round(state, event.unit),
                    caught_by="the merge queue",
                    sooner="the plan: give the colliding files to one unit",
                    evidence=[event.id],
                ),
            )
        case CandidateTested(stage="candidate") if not event.green and event.unit:
            for failing in event.failing:
                _add(state, event.unit, _red(state, event.unit, failing, event.id, "candidate"))
        case MergeReverted() if event.unit:
            for failing in event.failing:
                _add(state, event.unit, _red(state, event.unit, failing, event.id, "trunk"))
        case FindingRaised() if event.actor.role == "system":
            found = _finding_lesson(state, event)
            if found is not None:
                _add(state, event.unit, found)
        case SliceClosed():
            lessons = state.running.pop(event.slice, [])
            if event.slice not in state.recorded:
                state.due[event.slice] = Due(closed=event.id, lessons=lessons)
            if event.slice not in state.closed_out:
                units = sorted(u for u, s in state.slice_of.items() if s == event.slice)
                state.closing[event.slice] = Closing(
                    slice=event.slice, closed=event.id, units=units
                )
        case LessonsRecorded():
            _recorded(state, event)
        case SliceClosedOut():
            state.closing.pop(event.slice, None)
            state.closed_out[event.slice] = event
    return state


def _recorded(state: LessonsState, event: LessonsRecorded) -> None:
    state.due.pop(event.slice, None)
    if event.slice in state.recorded:
        return  # the first record of a slice's lessons is the one in force
    state.recorded[event.slice] = Recorded(id=event.id, slice=event.slice, lessons=event.lessons)
    state.order.append(event.slice)
    for lesson in event.lessons:
        if lesson.claimed:
            continue  # an agent's word never makes a lesson recur
        found = state.recurring.setdefault(lesson.cls, Recurrence())
        if event.slice not in found.slices:
            found.slices.append(event.slice)
            found.records.append(event.id)
        found.latest = lesson


def _round_lessons(state: LessonsState, event: RoundClosed) -> list[Lesson]:
    if event.source == "gate":
        return [
            Lesson(
                cls=f"gate:{check}",
                kind="gate-finding",
                what=f"check {check} was red",
                unit=event.unit,
                round=event.round,
                caught_by=f"the unit's gate ({check})",
                sooner=f"{check}, run by the builder before it reports",
                evidence=[event.id],
            )
            for check in event.failing_checks
        ]
    out: list[Lesson] = []
    for key in event.blocking_keys or event.finding_keys:
        target, _, criterion = _parts(key)
        covering = criterion if criterion in state.checks else ""
        out.append(
            Lesson(
                cls=f"review:{criterion or target}",
                kind="review-finding",
                what=f"review blocked on {criterion or 'a finding'} at {target}",
                unit=event.unit,
                round=event.round,
                caught_by="review",
                sooner=f"check {covering}, at the unit's gate before review" if covering else "",
                evidence=[event.id],
            )
        )
    return out


def _parts(key: str) -> tuple[str, str, str]:
    target, _, rest = key.partition("|")
    severity, _, criterion = rest.partition("|")
    return target, severity, criterion


def _red(state: LessonsState, unit: str, failing: FailingTest, cause: str, where: str) -> Lesson:
    """A red candidate or trunk: the union broke a test the unit passed alone. A unit-level
    check running that test against trunk's head would have shown it before the queue."""
    test = failing.test
    # A test's name is the unit's code speaking: it becomes part of a command only when it
    # is a plain pytest node id (no shell syntax), and the failure's text is left out of a
    # lesson that later briefs carry.
    node = NODE_ID.fullmatch(test) is not None
    return Lesson(
        cls=f"trunk-red:{test}",
        kind="trunk-red",
        what=f"{test} was red on the merge {where} after {unit}",
        unit=unit,
        round=_round(state, unit),
        caught_by=f"the trunk gate ({failing.check}) on the {where}",
        sooner=f"a unit-level check running {test} on the unit merged with trunk" if node else "",
        check=f"python -m pytest -q -p no:cacheprovider {test}" if node else "",
        evidence=[cause],
    )


def _finding_lesson(state: LessonsState, event: FindingRaised) -> Lesson | None:
    if event.unit is None or event.unit not in state.slice_of:
        return None
    if event.cls == "investigation":
        return Lesson(
            cls=f"investigation:{event.criterion or event.target}",
            kind="investigation",
            what=event.message[:200],
            unit=event.unit,
            round=_round(state, event.unit),
            caught_by="an investigation",
            evidence=[event.id],
            claimed=True,
        )
    if event.producer == "trunk_gate" and event.criterion == VERIFY_CRITERION:
        # The code-cold verifier's finding (workers/verifier/answer.py). Its class is the
        # acceptance check it names (or its words), so two different failures are two
        # lessons. That name is the verifier's id for its check, not a command: such a
        # lesson names no gate command (its gate comes through [verify] propose_gates).
        check = event.evidence.get("check")
        named = check if isinstance(check, str) and check else event.message[:80]
        return Lesson(
            cls=f"verifier:{named}",
            kind="verifier-finding",
            what=f"the verifier found: {event.message[:160]}",
            unit=event.unit,
            round=_round(state, event.unit),
            caught_by="the code-cold verifier",
            sooner=f"the verifier's check {named[:80]} as a unit gate",
            evidence=[event.id],
        )
    return None


FOLD = Fold(name="lessons", state_type=LessonsState, initial=LessonsState, apply=apply)


# -- queries ----------------------------------------------------------------------------


def due(state: LessonsState) -> list[tuple[str, Due]]:
    return sorted(state.due.items())


def to_close_out(state: LessonsState) -> list[Closing]:
    return [state.closing[s] for s in sorted(state.closing)]


def in_force(state: LessonsState, limit: int = MAX_BRIEF_LESSONS) -> list[str]:
    """The recorded lessons a brief carries, one line each: the recurring classes first
    (most slices first), then the rest, most recent slice first; at most ``limit``."""
    lines: list[tuple[tuple[int, int], str]] = []
    seen: set[str] = set()
    for rank, slice_id in reversed(list(enumerate(state.order))):  # newest first
        found_record = state.recorded.get(slice_id)  # a paged view may hold part of it
        for lesson in found_record.lessons if found_record is not None else ():
            seen_key = lesson.cls if not lesson.claimed else f"claim:{lesson.cls}"
            if seen_key in seen:
                continue
            seen.add(seen_key)
            found = state.recurring.get(lesson.cls)
            times = len(found.slices) if found is not None and not lesson.claimed else 1
            prefix = f"[{times} slices] " if times > 1 else f"[{slice_id}] "
            lines.append(((-times, -rank), (prefix + lesson.line())[:MAX_LINE]))
    lines.sort(key=lambda item: item[0])
    return [text for _, text in lines[:limit]]


def gate_id(cls: str) -> str:
    """The id of the gate a recurring lesson class drafts (a token, stable per class)."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", cls.split(":", 1)[-1]).strip("-")[-40:]
    digest = hashlib.sha256(cls.encode()).hexdigest()[:8]
    return f"{LESSON_GATE_PREFIX}{slug}-{digest}" if slug else f"{LESSON_GATE_PREFIX}{digest}"


def recurring(state: LessonsState, at_least: int = RECUR_AT) -> list[tuple[str, Recurrence]]:
    """Lesson classes recorded in ``at_least`` slices whose lesson names a check command
    no gate runs yet: each drafts one gate (:func:`gate_id`)."""
    out: list[tuple[str, Recurrence]] = []
    for cls, found in sorted(state.recurring.items()):
        if len(found.slices) < at_least or found.latest is None or not found.latest.check:
            continue
        gate = gate_id(cls)
        if gate in state.drafted or gate in state.checks:
            continue
        out.append((cls, found))
    return out
