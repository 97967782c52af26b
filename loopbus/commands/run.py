"""``loopbus run``: the run of the charter in force — its state, slices, criteria held and
budgets spent — and ``loopbus run --stop --why ...`` to end it now (operators).

The stop is an operator's claim (``run.stop.v1``); the charter daemon answers it with
``run.ended.v1`` (stopped), after which the dispatcher dispatches nothing more.
"""

from __future__ import annotations

import argparse
import asyncio

from loopbus.claiming import publish_claim
from loopbus.commands.report import principal, token
from loopbus.errors import UsageError
from loopbus.known import require_known
from loopbus.run_view import load_run, print_json, run_document, run_lines
from loopbus.settings import connection
from loopbus.terminal_text import one_line
from schemas import Actor, utcnow
from schemas.charter import RunStop
from schemas.subjects import subject_of


def run(args: argparse.Namespace) -> int:
    project = token("--project", args.project)
    why = (args.why or "").strip()
    if args.stop and not why:
        raise UsageError("--why is missing or empty: a stop says why the run ends now")
    if why and not args.stop:
        raise UsageError("--why goes with --stop; `loopbus run` alone only prints the run")

    async def go() -> int:
        bus = await connection(args).open()
        try:
            await require_known(bus, project)
            view = await load_run(bus, project)
            if not args.stop:
                since = (
                    ((view.ended_at or utcnow()) - view.approved_at).total_seconds()
                    if view.approved_at is not None
                    else None
                )
                if args.json:
                    print_json(run_document(project, view, since))
                else:
                    print("\n".join(one_line(line) for line in run_lines(view, since)))
                return 0
            if view.charter is None or view.ended is not None:
                raise UsageError(
                    f"--stop: {project!r} has no run in progress (state {view.state}); "
                    "loopbus run shows it"
                )
            claim = RunStop(
                project=project, actor=Actor(role="operator", principal=principal(args)), why=why
            )
            bus.check_publish(subject_of(claim))
            ack = await publish_claim(bus, claim)
        finally:
            await bus.close()
        if args.json:
            print_json({"stop": claim.id, "charter": view.charter.id, "seq": ack.seq})
            return 0
        print(
            f"stop {claim.id} of the run of charter {view.charter.id} published at seq "
            f"{ack.seq}; the charter daemon ends it (loopbus run shows it)"
        )
        return 0

    return asyncio.run(go())
