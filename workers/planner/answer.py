"""What the planner's answer becomes: read (:func:`parse_answer`), judged with the checks of
``loopbus plan check`` (:func:`plan_problems`), and turned into facts (:func:`answer`):
a refused try with its reasons, or a proposal (submitted at once at full autonomy). Pure:
no I/O, no clock.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import msgspec

from projections.charter_pins import contract_pin_problems
from projections.errors import PlanInvalid
from projections.intents import Publish, PublishBatch, Publishing
from projections.plan_parse import parse_plan
from projections.planner import submission_id
from projections.planning import validate
from schemas import Actor, Event, InvalidEvent, decode_event, encode_event
from schemas.charter import Charter
from schemas.ids import answer_id
from schemas.limits import bounded, oversize
from schemas.planning import PlanAttemptRefused, PlannerEnvelope, PlanProposed
from schemas.slices import PlanSubmission, SlicePlan
from workers.planner.effects import PlanSlice

PRINCIPAL = "planner"
"""The principal the daemon submits the planner's plans under (role ``planner``): the
plan is the planner's claim, which the dispatcher judges like any other."""


def submission(project: str, proposal: str, plan: SlicePlan, now: datetime) -> PlanSubmission:
    return PlanSubmission(
        id=submission_id(proposal),
        project=project,
        actor=Actor(role="planner", principal=PRINCIPAL),
        at=now,
        plan=plan,
    )


_envelope = msgspec.json.Decoder(PlannerEnvelope)


def parse_answer(stdout: bytes) -> tuple[SlicePlan, str] | list[str]:
    """The planner's answer as a plan and its summary, or the problems with it.

    Read, in order: the envelope ``{"plan": {...}, "summary": "..."}``; a plan as JSON
    (``{"slice": ..., "unit": [...]}``); a plan as TOML — the texts ``loopbus plan check``
    takes."""
    text = stdout.decode("utf-8", "replace").strip()
    if not text:
        return ["the planner printed nothing; print a plan (docs/planning.md)"]
    summary = ""
    plan_text, fmt = text, "toml"
    if text.startswith("{"):
        fmt = "json"
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            return [f"not valid JSON: {exc}"]
        if isinstance(doc, dict) and "plan" in doc:
            try:
                envelope = _envelope.decode(text)
            except msgspec.ValidationError as exc:
                return [f"the planner's envelope does not validate: {exc}"]
            plan_text, summary = json.dumps(envelope.plan), envelope.summary
    try:
        return parse_plan(plan_text, fmt), summary
    except PlanInvalid as exc:
        return list(exc.problems)


def plan_problems(
    plan: SlicePlan,
    slice_id: str,
    pending: list[str] | None,
    *,
    skeleton_allowed: bool,
    used_units: list[str] | tuple[str, ...] = (),
    charter: Charter | None = None,
) -> list[str]:
    """Every reason to refuse the planner's plan: the checks of ``loopbus plan check``
    (with trunk's pending criteria), that it plans the slice asked for, plans something,
    is a skeleton only where one may be, and writes no test file the charter pins
    otherwise than the charter's source says."""
    problems: list[str] = []
    if plan.slice != slice_id:
        problems.append(
            f"slice.id={plan.slice!r}: the slice to plan is {slice_id}; plan that one, not another"
        )
    if not plan.units:
        problems.append("the plan has no units: plan at least one [[unit]]")
    if plan.skeleton and not skeleton_allowed:
        problems.append(
            "slice.skeleton=true: only a charter's first slice may be a skeleton; plan a "
            "build slice"
        )
    used = set(used_units)
    for unit in plan.units:
        if unit.id in used:
            problems.append(
                f"unit {unit.id} is used by an earlier slice; unit ids are unique within a "
                "project (the brief lists used_units)"
            )
    problems.extend(validate(plan, pending))
    problems.extend(contract_pin_problems(plan, charter))
    return problems


def answer(
    project: str,
    args: PlanSlice,
    outcome: tuple[SlicePlan, str] | list[str],
    *,
    actor: Actor,
    now: datetime,
) -> Publishing:
    """What the try becomes: refused with its problems, or proposed (and, at full
    autonomy, submitted in the same atomic batch)."""
    brief = args.brief
    basis = args.basis
    common: dict[str, Any] = {
        "id": answer_id(basis, f"plan:{brief.slice}:{brief.attempt}"),
        "project": project,
        "actor": actor,
        "at": now,
        "slice": brief.slice,
        "charter": args.charter,
        "attempt": brief.attempt,
        "basis": basis,
    }
    if isinstance(outcome, list):
        return Publish(PlanAttemptRefused(**common, problems=[bounded(p) for p in outcome[:50]]))
    plan, summary = outcome
    full = args.autonomy == "full"
    proposed = PlanProposed(
        **common,
        plan=plan,
        skeleton=plan.skeleton,
        summary=summary[:2000],
        autonomy=args.autonomy,
        submission=submission_id(common["id"]) if full else "",
    )
    # An answer the log would refuse (a text over the limit, an event over a megabyte) is
    # a refused try, never an effect that fails and is performed again for ever.
    why = unrecordable(proposed)
    if why is not None:
        problem = f"the plan cannot be recorded on the log: {why}"
        return Publish(PlanAttemptRefused(**common, problems=[bounded(problem)]))
    if not full:
        return Publish(proposed)
    return PublishBatch((proposed, submission(project, proposed.id, plan, now)))


def unrecordable(event: Event) -> str | None:
    """Why the log would refuse ``event`` (readers decode with limits its constructor does
    not apply), or ``None``."""
    try:
        payload = encode_event(event)
        too_big = oversize(payload)
        if too_big is not None:
            return too_big
        decode_event(payload)
    except InvalidEvent as exc:
        return bounded(str(exc))
    return None
