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
from typing import Any

from loopbus.bus import Bus, read
from loopbus.commands.report import principal, token
from loopbus.errors import LoopbusError, UsageError
from loopbus.known import require_known
from loopbus.run_view import load_run
from loopbus.schemas import Actor, FindingRaised
from loopbus.schemas.authority import refused_claim
from loopbus.schemas.charter import CharterApprove, CharterApproved
from loopbus.schemas.subjects import project_subjects, subject_of
from loopbus.settings import connection

OPTION = "charter"
WAIT_S = 120.0
"""How long ``--wait`` waits for the charter daemon's answer."""


def add_option(group: Any) -> None:
    group.add_argument(
        "--charter",
        nargs="?",
        const="",
        default=None,
        metavar="ID",
        help="approve the charter awaiting approval (ID: check it is that one); its run starts",
    )


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
            ack = await bus.publish(claim)
            print(f"approval {claim.id} of charter {awaiting.id} published at seq {ack.seq}")
            if not args.wait:
                return 0
            return await wait_answer(bus, claim, ack.seq)
        finally:
            await bus.close()

    return asyncio.run(publish())


async def wait_answer(bus: Bus, claim: CharterApprove, seq: int) -> int:
    """Follow the log from ``seq`` until the system approves or refuses ``claim``."""
    try:
        async with asyncio.timeout(WAIT_S):
            async for record in read(
                bus, subjects=[project_subjects(claim.project)], start_seq=seq, follow=True
            ):
                event = record.event
                if (
                    isinstance(event, CharterApproved)
                    and event.actor.role == "system"
                    and event.claim == claim.id
                ):
                    print(f"approved: the run of charter {event.charter.id} started ({event.id})")
                    return 0
                if isinstance(event, FindingRaised) and refused_claim(event) == claim.id:
                    raise LoopbusError(f"approval refused: {event.message}")
    except TimeoutError:
        pass
    raise LoopbusError(
        f"no answer to approval {claim.id} in {WAIT_S:.0f}s: is the charter daemon running "
        "(loopbus up)? loopbus charter show tells where it stands"
    )
