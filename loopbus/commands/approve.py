"""``loopbus approve``: an operator approves a ready unit's head for merge, or (with
``--charter``) the charter awaiting approval, or (with ``--config``) a configuration
proposal.

What is approved is one of a mutually exclusive group of options: ``--unit`` here, and
each other kind in a module of its own listed in :data:`KINDS` (``add_option(group)`` adds
its option, ``run(args)`` runs it when that option was given).

For a unit it publishes an approve claim on the operator's own claim subject; the merger queues the
head or refuses the claim with a finding. Only an operator credential may publish it: the
server refuses the same claim from an agent credential (docs/security.md).
"""

from __future__ import annotations

import argparse

from bus import Bus
from loopbus.commands.approve_publish import publish_approval, refuse_wait
from loopbus.commands.report import principal, token
from loopbus.errors import UsageError
from loopbus.known_work import require_unit
from schemas import Actor
from schemas.merges import ApproveReport


def build(args: argparse.Namespace) -> ApproveReport:
    why = (args.why or "").strip()
    if not why:
        raise UsageError("--why is empty: an approval says why the unit may merge")
    return ApproveReport(
        project=token("--project", args.project),
        actor=Actor(role="operator", principal=principal(args)),
        unit=token("--unit", args.unit),
        head=(args.head or "").strip().lower(),
        note=why,
    )


def run(args: argparse.Namespace) -> int:
    refuse_wait(
        args,
        "a unit's approval is answered by the merge queue; follow it with loopbus tail "
        "--kind merge",
    )
    claim = build(args)
    return publish_approval(
        args,
        claim,
        lambda bus: require_open_unit(bus, claim.project, claim.unit),
        lambda seq: f"approval {claim.id} of {claim.project}/{claim.unit} published at seq {seq}",
    )


async def require_open_unit(bus: Bus, project: str, unit: str) -> None:
    """One line, before anything is published, for an approval that can only be refused: a
    unit no accepted plan has, or one that has ended (the merger would refuse either later,
    as a finding, while the command had already said "published")."""
    await require_unit(bus, project, unit, ended="to approve")
