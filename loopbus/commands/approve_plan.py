"""``loopbus approve --plan SLICE`` and ``loopbus approve --skeleton [SLICE]``: the operator's
approvals the planner daemon waits for.

``--plan`` approves the plan the planner proposed for ``SLICE`` at ``supervised``
autonomy: the daemon then submits it to the dispatcher. ``--skeleton`` approves a closed
skeleton slice (the one waiting, when ``SLICE`` is omitted): build slices may then be
planned. Each is a claim only an operator makes (from anyone else a forgery every fold
skips); an approval that could only be ignored is refused here in one line, before
anything is published.
"""

from __future__ import annotations

import argparse
import asyncio

from bus import Bus, read
from loopbus.claiming import publish_claim
from loopbus.commands.report import principal, token
from loopbus.errors import UsageError
from loopbus.known import require_known
from loopbus.settings import connection
from projections import planner as planner_fold
from projections import slices as slices_fold
from schemas import Actor, Event
from schemas.planning import PlanApprove, SkeletonApprove
from schemas.subjects import project_subjects, subject_of


def run(args: argparse.Namespace) -> int:
    """Approve a proposed plan (``--plan``) or a closed skeleton (``--skeleton``)."""
    if getattr(args, "wait", False):
        raise UsageError(
            "--wait is for --charter: the planner daemon answers a plan's or a skeleton's "
            "approval; follow it with loopbus tail"
        )
    why = (args.why or "").strip()
    if not why:
        raise UsageError("--why is empty: an approval says why (it is kept on the log)")
    project = token("--project", args.project)
    actor = Actor(role="operator", principal=principal(args))
    # A slice id that cannot be one is refused before connecting, like any bad argument.
    planned = token("--plan", args.plan) if getattr(args, "plan", None) is not None else None
    if getattr(args, "skeleton", None):
        token("--skeleton", args.skeleton)

    async def publish() -> int:
        bus = await connection(args).open()
        try:
            await require_known(bus, project)
            events = await _events(bus, project)
            claim: PlanApprove | SkeletonApprove
            if planned is not None:
                slice_id = planned
                proposal = _require_proposal(events, slice_id)
                claim = PlanApprove(
                    project=project, actor=actor, slice=slice_id, why=why, proposal=proposal
                )
            else:
                slice_id = _skeleton(events, args.skeleton)
                claim = SkeletonApprove(project=project, actor=actor, slice=slice_id, why=why)
            bus.check_publish(subject_of(claim))  # a credential that may not approve: say so
            ack = await publish_claim(bus, claim)
        finally:
            await bus.close()
        what = "plan" if isinstance(claim, PlanApprove) else "skeleton"
        print(f"approval {claim.id} of {what} {project}/{claim.slice} published at seq {ack.seq}")
        return 0

    return asyncio.run(publish())


async def _events(bus: Bus, project: str) -> list[Event]:
    return [
        r.event
        async for r in read(bus, subjects=[project_subjects(project)])
        if r.event is not None
    ]


def _require_proposal(events: list[Event], slice_id: str) -> str:
    """The id of the proposal for the slice the operator approves; one line for an
    approval the planner would ignore: no proposal for the slice in the current round, or
    one already submitted."""
    state = planner_fold.FOLD.fold(events)
    proposal = state.proposals.get(slice_id)
    if proposal is None:
        raise UsageError(
            f"--plan {slice_id!r}: the planner has proposed no plan for that slice "
            "(loopbus tail shows plan.proposed.v1 facts)"
        )
    if proposal.submitted or proposal.approved is not None:
        raise UsageError(f"--plan {slice_id!r}: its plan is approved already")
    return proposal.id


def _skeleton(events: list[Event], named: str) -> str:
    """The closed skeleton slice to approve: ``named``, or the one waiting."""
    state = planner_fold.FOLD.fold(events)
    slices = slices_fold.FOLD.fold(events)
    waiting = sorted(
        s
        for s, view in slices.slices.items()
        if view.status == "closed" and view.plan.skeleton and s not in state.skeleton_approved
    )
    if named:
        slice_id = token("--skeleton", named)
        if slice_id not in waiting:
            raise UsageError(
                f"--skeleton {slice_id!r}: not a closed skeleton slice waiting for approval"
                + (f" (waiting: {', '.join(waiting)})" if waiting else "")
            )
        return slice_id
    if not waiting:
        raise UsageError("--skeleton: no closed skeleton slice waits for approval")
    return waiting[0]
