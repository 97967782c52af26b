"""``loopbus plan check|submit``: a slice plan, validated locally or submitted as a claim.

``check`` publishes nothing: it reads the plan (TOML, or JSON for ``*.json``), validates it
— with ``--repo``, also against the pending criteria of that repository's ``loopbus.toml``
— and prints the waves, the disjoint-file sub-waves and the dispatch order. A refused plan
exits 1 with one line per problem; a ``--repo`` whose ``loopbus.toml`` is missing or cannot
be read is a usage error (exit 2, one line).

``submit`` publishes the plan as a planner's claim and waits for the dispatcher daemon's
answer: ``SlicePlanAccepted`` (exit 0) or a refusal finding (exit 1, the refusal in one
line). ``--wait S`` bounds the wait (default 30 s; nothing answering is exit 1 with a line
saying whether a dispatcher is running); ``--no-wait`` publishes and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

import msgspec

from bus import Bus, BusError, read
from loopbus.claiming import publish_claim
from loopbus.commands.report import principal
from loopbus.errors import PlanRefused, UsageError
from loopbus.known import require_known, require_new
from loopbus.repo_check import (
    commit_hint,
    config_warnings,
    uncommitted_config,
    validate_config,
)
from loopbus.settings import Connection, connection
from loopbus.slice_render import render_schedule
from loopbus.terminal_text import count, say
from projections import slices
from projections.errors import PlanInvalid
from projections.plan_parse import parse_plan, plan_format
from projections.planning import schedule, unclaimed_extras, validate
from projections.slice_asks import REFUSAL_EVIDENCE_KEY, Submission
from schemas import Actor, FindingRaised, project_subjects, subject_of
from schemas.ids import is_token
from schemas.slices import PlanSubmission, SlicePlan, SlicePlanAccepted
from schemas.subjects import slice_subjects
from workers.agents.cli import TRUNK_ENV
from workers.agents.config import config_text
from workers.dispatcher.face import NAME as DISPATCHER
from workers.dispatcher.face import claim_problems
from workers.errors import WorkerError
from workers.gates.contract_check import repo_contract_problems
from workers.gates.declared import pending_criteria
from workers.runtime import check_health

_json = msgspec.json.Encoder()

"""The daemon name the dispatcher's health beacon is kept under (``loopbus health``)."""


def load_plan(path: Path) -> SlicePlan:
    """Read and parse a plan file; problems are raised as one :class:`PlanRefused`."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read plan {str(path)!r}: {exc.strerror or exc}") from exc
    try:
        return parse_plan(text, plan_format(path.name))
    except PlanInvalid as exc:
        raise PlanRefused(str(path), exc.problems) from exc


def repo_config(repo: Path) -> str:
    """Trunk's ``loopbus.toml`` (``repo_criteria`` has already said why when there is none)."""
    return config_text(repo, os.environ.get(TRUNK_ENV) or None) or ""


def repo_criteria(repo: Path) -> tuple[list[str], list[str]]:
    """The pending criteria of ``repo``'s ``loopbus.toml`` and the warnings about it; a
    configuration that is missing or cannot be read is a wrong ``--repo`` (one line, exit 2),
    saying to commit it when the working tree's differs from trunk's."""
    trunk = os.environ.get(TRUNK_ENV) or None
    try:
        # From the trunk commit (bare or not), never a working tree's uncommitted edit;
        # a plain folder's file as it is.
        text = config_text(repo, trunk)
    except WorkerError as exc:
        raise UsageError(f"--repo {str(repo)!r}: {' '.join(str(exc).split())}") from exc
    if text is None:
        raise UsageError(
            f"--repo {str(repo)!r} has no loopbus.toml on its trunk (or at its root)"
            + commit_hint(repo, text)
        )
    source = f"{repo}/loopbus.toml"
    try:
        config = validate_config(text, source, repo)
    except WorkerError as exc:
        detail = " ".join(str(exc).split())
        raise UsageError(f"--repo {str(repo)!r}: {detail}{commit_hint(repo, text)}") from exc
    notes = config_warnings(config, source) + uncommitted_config(repo, text, trunk)
    return pending_criteria(config), notes


def run_check(args: argparse.Namespace) -> int:
    pending: list[str] | None = None
    config_notes: list[str] = []
    if args.repo is not None:
        pending, config_notes = repo_criteria(args.repo)
    try:
        plan = load_plan(args.plan)
        problems = validate(plan, pending)
        if args.repo is not None and plan.contract is not None:
            problems += repo_contract_problems(args.repo, plan, repo_config(args.repo))
        if problems:
            raise PlanRefused(str(args.plan), problems)
    except PlanRefused as refused:
        if args.json:
            doc = {"accepted": False, "problems": refused.problems}
            sys.stdout.write(_json.encode(doc).decode() + "\n")
        for problem in refused.problems:
            say(f"{refused.source}: {problem}", file=sys.stderr)
        return 1
    sched = schedule(plan)
    warnings = unclaimed_extras(plan, pending) if pending is not None else []
    warnings += config_notes
    if args.json:
        doc = {
            "accepted": True,
            "slice": plan.slice,
            "order": sched.order,
            "waves": sched.groups(),
            "structure": sched.waves,
            "depth": sched.depth,
            "dependents": sched.dependents,
            "pending": pending,
            "warnings": warnings,
        }
        sys.stdout.write(_json.encode(doc).decode() + "\n")
        return 0
    checked = (
        f"{count(len(pending), 'pending criterion', 'pending criteria')} of {args.repo} each "
        "claimed once"
        if pending is not None
        else "criteria not checked against a repository (pass --repo)"
    )
    units, waves = count(len(plan.units), "unit"), count(len(sched.waves), "wave")
    say(f"plan {plan.slice}: {units} in {waves}; {checked}")
    for line in render_schedule(sched):
        say(f"  {line}")
    for warning in warnings:
        say(f"warning: {warning}", file=sys.stderr)
    return 0


def run_submit(args: argparse.Namespace) -> int:
    if not is_token(args.project):
        raise UsageError(f"--project {args.project!r} is not a valid project id")
    try:
        plan = load_plan(args.plan)
    except PlanRefused as refused:
        for problem in refused.problems:
            say(f"{refused.source}: {problem}", file=sys.stderr)
        return 1
    submission = PlanSubmission(
        project=args.project,
        actor=Actor(role=args.role, principal=principal(args)),
        plan=plan,
    )
    wait_s = 0.0 if args.no_wait else args.wait
    return asyncio.run(_submit(connection(args), submission, wait_s, new=args.new))


async def require_acceptable_claim(bus: Bus, submission: PlanSubmission) -> None:
    """One line, before publishing, for a plan the dispatcher can only refuse whatever trunk
    declares: the dispatcher's own check (its slice holds an accepted plan that was not
    discarded, a unit id another slice holds, a role that may not plan) on the slice facts
    folded as the dispatcher folds them (forged ones never count)."""
    facts = [r.event async for r in read(bus, subjects=[slice_subjects(submission.project)])]
    state = slices.FOLD.fold(e for e in facts if e is not None)
    problems = claim_problems(
        state,
        Submission(
            id=submission.id,
            slice=submission.plan.slice,
            plan=submission.plan,
            at=submission.at,
            role=submission.actor.role,
        ),
    )
    if problems:
        raise UsageError(
            f"slice {submission.plan.slice!r} of project {submission.project!r} would be "
            f"refused: {'; '.join(problems)}"
        )


async def _submit(
    conn: Connection, submission: PlanSubmission, wait_s: float, *, new: bool = False
) -> int:
    bus = await conn.open()
    try:
        bus.check_publish(subject_of(submission))  # a credential that may not plan: say so
        if new:
            await require_new(bus, submission.project)
        else:
            await require_known(
                bus, submission.project, hint="a new project's first plan: pass --new"
            )
        await require_acceptable_claim(bus, submission)
        ack = await publish_claim(bus, submission)
        say(f"submitted plan for slice {submission.plan.slice} as {submission.id} (seq {ack.seq})")
        if wait_s <= 0:
            return 0
        answer = await _answer(bus, submission, ack.seq, wait_s)
        if answer is None:
            say(await _unanswered(bus, wait_s, ack.seq), file=sys.stderr)
            return 1
    finally:
        await bus.close()
    if isinstance(answer, SlicePlanAccepted):
        say(f"accepted: slice {submission.plan.slice} ({answer.id})")
        return 0
    problems = answer.evidence.get("problems") or [answer.message]
    # One line, whatever the number of problems: a script or a person reads it at once.
    say(
        f"refused ({answer.id}): plan for slice {submission.plan.slice}: "
        + "; ".join(" ".join(str(p).split()) for p in problems),
        file=sys.stderr,
    )
    return 1


async def _unanswered(bus: Bus, wait_s: float, seq: int) -> str:
    """Why nothing answered, in one line: whether a dispatcher beacons at all (the usual
    cause: none runs), and that the plan is on the log all the same."""
    stays = f"the plan stays on the log (seq {seq}) and is answered when a dispatcher reads it"
    try:
        beacon = await check_health(bus, DISPATCHER)
    except BusError:  # the beacons cannot be read with this credential: say what is known
        return f"no answer within {wait_s:g}s: is a dispatcher running (`loopbus up`)? {stays}"
    if beacon is None:
        return (
            f"no answer within {wait_s:g}s: no dispatcher is running (none has reported "
            f"health); start one with `loopbus up --repo PATH`; {stays}"
        )
    return (
        f"no answer within {wait_s:g}s from the dispatcher (pid {beacon.pid} on "
        f"{beacon.host}): see its log, or wait longer with --wait SECONDS; {stays}"
    )


async def _answer(
    bus: Bus, submission: PlanSubmission, after: int, wait_s: float
) -> SlicePlanAccepted | FindingRaised | None:
    """The dispatcher's answer to ``submission`` (``None``: none within ``wait_s``)."""
    from loopbus.answers import await_answer

    def answer(event: object) -> SlicePlanAccepted | FindingRaised | None:
        if isinstance(event, SlicePlanAccepted) and event.cause == submission.id:
            return event
        if (
            isinstance(event, FindingRaised)
            and event.evidence.get(REFUSAL_EVIDENCE_KEY) == submission.id
        ):
            return event
        return None

    subjects = [project_subjects(submission.project)]
    return await await_answer(bus, subjects, answer, wait_s, after=after)
