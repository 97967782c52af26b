"""``loopbus approve --charter [ID] --why ... [--wait]``: an operator approves the charter
awaiting approval, which starts its run.

It publishes an operator's claim (``charter.approve.v1``) naming the charter and the
submission it approves, as the log shows them now; the charter daemon answers it with
``charter.approved.v1`` or refuses it with a finding. With ``--wait`` the command follows
the log until that answer and says which.
"""

from __future__ import annotations

import argparse
import asyncio

from bus import Bus
from loopbus.claiming import publish_claim
from loopbus.commands.report import principal, token
from loopbus.errors import LoopbusError, UsageError
from loopbus.known import require_known
from loopbus.run_view import load_run
from loopbus.settings import connection
from schemas import Actor, FindingRaised
from schemas.authority import refused_claim
from schemas.charter import CharterApprove, CharterApproved
from schemas.subjects import project_subjects, subject_of

WAIT_S = 120.0
"""How long ``--wait`` waits for the charter daemon's answer."""


def run(args: argparse.Namespace) -> int:
    why = (args.why or "").strip()
    if not why:
        raise UsageError("--why is empty: an approval says why the charter may run")
    wanted = token("--charter", args.charter) if args.charter else ""
    if args.head:
        raise UsageError("--head names a unit's commit; a charter approval takes none")
    project = token("--project", args.project)
    actor = Actor(role="operator", principal=principal(args))

    async def publish() -> int:
        bus = await connection(args).open()
        try:
            probe = CharterApprove(project=project, actor=actor)
            bus.check_publish(subject_of(probe))  # a credential that may not approve: say so
            await require_known(bus, project)
            view = await load_run(bus, project)
            awaiting = view.awaiting
            if awaiting is None:
                raise UsageError(
                    f"--charter: no charter of {project!r} awaits approval "
                    "(loopbus charter show; submit one with loopbus charter submit FILE)"
                )
            if wanted and wanted != awaiting.id:
                raise UsageError(
                    f"--charter {wanted!r}: the charter awaiting approval is {awaiting.id!r}; "
                    "approve that one, or submit yours first"
                )
            claim = CharterApprove(
                project=project,
                actor=actor,
                charter=awaiting.id,
                submission=view.awaiting_submission,
                why=why,
            )
            ack = await publish_claim(bus, claim)
            print(f"approval {claim.id} of charter {awaiting.id} published at seq {ack.seq}")
            if not args.wait:
                return 0
            return await wait_answer(bus, claim, ack.seq)
        finally:
            await bus.close()

    return asyncio.run(publish())


async def wait_answer(bus: Bus, claim: CharterApprove, seq: int) -> int:
    """Follow the log past ``seq`` until the system approves or refuses ``claim``."""
    from loopbus.answers import await_answer

    def answer(event: object) -> CharterApproved | FindingRaised | None:
        if isinstance(event, CharterApproved) and event.claim == claim.id:
            return event
        if isinstance(event, FindingRaised) and refused_claim(event) == claim.id:
            return event
        return None

    subjects = [project_subjects(claim.project)]
    found = await await_answer(bus, subjects, answer, WAIT_S, after=seq)
    if isinstance(found, CharterApproved):
        print(f"approved: the run of charter {found.charter.id} started ({found.id})")
        return 0
    if found is not None:
        raise LoopbusError(f"approval refused: {found.message}")
    raise LoopbusError(
        f"no answer to approval {claim.id} in {WAIT_S:.0f}s: is the charter daemon running "
        "(loopbus up)? loopbus charter show tells where it stands"
    )
