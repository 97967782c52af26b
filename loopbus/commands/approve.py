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
from typing import Any

from loopbus.bus import Bus, read
from loopbus.commands import approve_charter, approve_config, approve_plan, approve_skeleton
from loopbus.commands.approve_publish import publish_approval, refuse_wait
from loopbus.commands.report import add_claimant, principal, token
from loopbus.errors import UsageError
from loopbus.projections import units as units_fold
from loopbus.schemas import Actor
from loopbus.schemas.merges import ApproveReport
from loopbus.schemas.subjects import unit_subject
from loopbus.schemas.units import TERMINAL_STATES
from loopbus.settings import add_connection, add_project


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "approve",
        help="approve a unit for merge, a charter, a proposed plan, a skeleton or a "
        "configuration proposal (operators)",
    )
    add_connection(parser, role="operator")
    add_claimant(parser)
    add_project(parser)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--unit", help="the unit to approve for merge")
    for kind in KINDS:
        kind.add_option(what)
    parser.add_argument("--why", required=True, help="why it is approved (kept on the log)")
    parser.add_argument(
        "--head", default="", help="the commit approved (default: the unit's current head)"
    )
    parser.add_argument(
        "--wait",
        action="store_true",
        help="wait until the system answers the approval (approved, or refused and why)",
    )
    parser.set_defaults(handler=dispatch)


KINDS: tuple[Any, ...] = (approve_charter, approve_plan, approve_skeleton, approve_config)
"""The other things an operator approves: each module's ``OPTION`` names its option (the
``args`` attribute that is not ``None`` when it was given)."""


def dispatch(args: argparse.Namespace) -> int:
    for kind in KINDS:
        if getattr(args, kind.OPTION, None) is not None:
            return int(kind.run(args))
    return run(args)


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
    as a finding, while the command had already said "published"). The unit's subject is
    folded as the daemons fold it, so a forged plan or transition does not count."""
    facts = [r.event async for r in read(bus, subjects=[unit_subject(project, unit)])]
    view = units_fold.FOLD.fold(e for e in facts if e is not None).units.get(unit)
    if view is None:
        raise UsageError(
            f"--unit {unit!r}: no accepted plan of project {project!r} has that unit "
            "(loopbus status --project shows its units)"
        )
    if view.state in TERMINAL_STATES:
        raise UsageError(f"--unit {unit!r} is {view.state} already: there is nothing to approve")
