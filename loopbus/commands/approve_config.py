"""``loopbus approve --config ID``: an operator approves a configuration proposal.

``loopbus config propose`` published the proposal (the whole new ``loopbus.toml``); this
publishes the approval (``config.approve.v1``) on the operator's own claim subject. The
merger then lands the proposed file as one system commit on a green trunk, adopts it and
records ``config.landed.v1``, or refuses the approval with a finding (a role other than
operator, an unknown or refused proposal, a file that edits or loosens a check).
"""

from __future__ import annotations

import argparse

from bus import Bus, read
from loopbus.commands.approve_publish import publish_approval, refuse_wait
from loopbus.commands.report import principal, token
from loopbus.errors import UsageError
from schemas import Actor
from schemas.contract import ConfigApprove, ConfigProposal


def build(args: argparse.Namespace) -> ConfigApprove:
    why = (args.why or "").strip()
    if not why:
        raise UsageError("--why is empty: an approval says why the configuration may change")
    proposal = (args.config or "").strip()
    if not proposal:
        raise UsageError("--config is empty: name the proposal (loopbus config propose printed it)")
    return ConfigApprove(
        project=token("--project", args.project),
        actor=Actor(role="operator", principal=principal(args)),
        proposal=proposal,
        why=why,
    )


async def require_proposal(bus: Bus, project: str, proposal: str) -> None:
    """One line, before anything is published, when no proposal has that id."""
    subject = f"loop.{project}.claim.*.*.config.proposal"
    async for record in read(bus, subjects=[subject]):
        if isinstance(record.event, ConfigProposal) and record.event.id == proposal:
            return
    raise UsageError(
        f"--config {proposal!r}: no configuration proposal of project {project!r} has that id "
        "(loopbus tail --project P --kind config.proposal lists them)"
    )


def run(args: argparse.Namespace) -> int:
    refuse_wait(
        args,
        "a configuration approval is answered by the merger when trunk is green; follow it "
        "with loopbus tail --kind config",
    )
    claim = build(args)
    return publish_approval(
        args,
        claim,
        lambda bus: require_proposal(bus, claim.project, claim.proposal),
        lambda seq: (
            f"approval {claim.id} of configuration proposal {claim.proposal} published "
            f"at seq {seq}; the merger lands it on a green trunk (loopbus tail --kind config) or "
            "refuses it with a finding"
        ),
    )
