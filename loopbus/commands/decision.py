"""``loopbus decision record|supersede|show|list|objective``: durable decisions.

``record`` and ``supersede`` publish an operator's :class:`DecisionRecorded` claim; the
ratchet daemon records it as the system's decision (a fact, whose id is the decision id)
or refuses it, and ``--wait`` prints which. ``objective`` declares (or withdraws) a charter
objective decisions serve. ``show`` and ``list`` fold the log's decisions. The CLI writes
no fact itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json

from bus import Bus, read
from loopbus.claiming import publish_claim
from loopbus.commands.report import principal, token
from loopbus.errors import LoopbusError, UsageError
from loopbus.known import require_known, require_known_unless_new
from loopbus.settings import connection
from loopbus.terminal_text import say
from projections import decisions
from projections.base import to_builtins
from projections.decisions import ANSWERS_CLAIM, DecisionsState
from schemas import Actor, Event, FindingRaised, InvalidValue, project_subjects
from schemas.decisions import DecisionRecorded, ObjectiveDeclared
from schemas.targets import inside_repository

FLAGS = {
    "question": "--question",
    "chosen": "--chosen",
    "owner": "--owner",
    "options": "--option",
    "confidence": "--confidence",
    "slice": "--slice",
}


async def load(bus: Bus, project: str) -> DecisionsState:
    """The project's decisions, folded from the log as it is now."""
    state = decisions.FOLD.initial()
    async for record in read(bus, subjects=[project_subjects(project)]):
        if record.event is not None:
            state = decisions.FOLD.apply(state, record.event)
    return state


def repo_files(given: list[str]) -> list[str]:
    """Each ``--file`` as a repository-relative path, or the one line refusing it: a
    decision bears on the repository's files (the planner matches them to units' files)."""
    files = []
    for path in given:
        cleaned = inside_repository(path)
        if cleaned is None:
            raise UsageError(
                f"--file {path!r} must be a path inside the repository (relative to its "
                "root, without '..'), e.g. --file src/app.py"
            )
        files.append(cleaned)
    return files


def build(args: argparse.Namespace, question: str) -> DecisionRecorded:
    token("--project", args.project)
    files = repo_files(args.file)
    try:
        return DecisionRecorded(
            project=args.project,
            actor=Actor(role="operator", principal=principal(args)),
            question=question,
            options=list(args.option),
            chosen=args.chosen,
            owner=args.owner,
            serves=args.serves,
            evidence=list(args.evidence),
            supersedes=getattr(args, "supersedes", None),
            confidence=args.confidence,
            rationale=args.rationale,
            files=files,
            criteria=list(args.criterion),
            slice=args.slice,
        )
    except InvalidValue as exc:
        raise UsageError(f"{FLAGS.get(exc.field, exc.field)} {exc.value!r}: {exc.hint}") from exc


def run_record(args: argparse.Namespace) -> int:
    if not 0 <= args.confidence <= 1:
        raise UsageError(f"--confidence {args.confidence!r}: give a number from 0 to 1")
    repo_files(args.file)  # before connecting: a bad path is refused without a server

    async def go() -> int:
        bus = await connection(args).open()
        try:
            await require_known_unless_new(bus, args)
            question = args.question
            if question is None:  # supersede: the same question unless a new one is given
                prior = (await load(bus, args.project)).decisions.get(args.supersedes)
                if prior is None:
                    raise UsageError(
                        f"--id {args.supersedes!r}: no decision with that id on "
                        f"{args.project}'s log; `loopbus decision list` shows them"
                    )
                question = prior.record.question
            claim = build(args, question)
            ack = await publish_claim(bus, claim)
            say(f"decision claimed at seq {ack.seq} ({claim.id})")
            return await _wait(bus, args, claim, ack.seq) if args.wait is not None else 0
        finally:
            await bus.close()

    return asyncio.run(go())


async def _wait(bus: Bus, args: argparse.Namespace, claim: DecisionRecorded, seq: int) -> int:
    from loopbus.answers import wait_for_answer

    def answer(event: Event) -> str | None:
        return _answer(event, claim)

    return await wait_for_answer(bus, args.project, answer, args.wait, "ratchet", after=seq)


def _answer(event: Event | None, claim: DecisionRecorded) -> str | None:
    match event:
        case DecisionRecorded(claim=answered) if answered == claim.id:
            return f"recorded as decision {event.id}"
        case FindingRaised(evidence=evidence) if evidence.get(ANSWERS_CLAIM) == claim.id:
            return event.message
    return None


def run_objective(args: argparse.Namespace) -> int:
    token("--project", args.project)
    token("--id", args.objective)
    declared = ObjectiveDeclared(
        project=args.project,
        actor=Actor(role="operator", principal=principal(args)),
        objective=args.objective,
        text=args.text,
        live=not args.withdraw,
    )

    async def go() -> int:
        bus = await connection(args).open()
        try:
            await require_known_unless_new(bus, args)
            ack = await publish_claim(bus, declared)
        finally:
            await bus.close()
        state = "withdrawn" if args.withdraw else "live"
        say(f"objective {args.objective} {state} at seq {ack.seq}")
        return 0

    return asyncio.run(go())


def _state(args: argparse.Namespace) -> DecisionsState:
    token("--project", args.project)

    async def go() -> DecisionsState:
        bus = await connection(args).open()
        try:
            await require_known(bus, args.project)
            return await load(bus, args.project)
        finally:
            await bus.close()

    return asyncio.run(go())


def run_show(args: argparse.Namespace) -> int:
    state = _state(args)
    found = state.decisions.get(args.decision)
    if found is None:
        raise LoopbusError(f"no decision {args.decision} on {args.project}'s log")
    chain = decisions.chain(state, args.decision)
    if args.json:
        print(json.dumps({"decision": to_builtins(found), "chain": chain}, default=str))
        return 0
    record = found.record
    status = f"superseded by {found.superseded_by}" if found.superseded_by else "in force"
    say(f"decision {record.id} ({status})")
    say(f"  question: {record.question}")
    say(
        f"  chosen:   {record.chosen}"
        + (f" of {', '.join(record.options)}" if record.options else "")
    )
    say(f"  owner:    {record.owner}; serves {record.serves or '(no objective)'}")
    for label, values in (
        ("evidence", record.evidence),
        ("files", record.files),
        ("criteria", record.criteria),
    ):
        if values:
            say(f"  {label}: {', '.join(values)}")
    if record.rationale:
        say(f"  rationale: {record.rationale}")
    say(f"  briefed:  {', '.join(found.briefed) or 'no unit yet'}")
    say(f"  chain:    {' -> '.join(chain)}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    state = _state(args)
    shown = list(state.decisions.values()) if args.all else decisions.in_force(state)
    if args.json:
        print(json.dumps([to_builtins(d) for d in shown], default=str))
        return 0
    if not shown:
        say(f"{args.project}: no decisions" + ("" if args.all else " in force"))
    for found in sorted(shown, key=lambda d: d.record.id):
        record = found.record
        mark = f" (superseded by {found.superseded_by})" if found.superseded_by else ""
        say(f"{record.id} {record.question} -> {record.chosen} [{record.owner}]{mark}")
    return 0
