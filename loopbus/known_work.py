"""Refusing a unit, slice, owner or gate the project does not have: one line, exit 2, before a
claim is published.

A claim about a unit no accepted plan has (``report started --unit nosuch``) would be
published, printed as "published at seq N", and only then refused by a daemon with a
finding; a finding naming such a unit would sit on the permanent log, and ``status`` would
show it as owned by work that never existed. What exists is read the way the daemons fold
it: a unit from its own subject through the ``units`` fold, a slice from the system's
acceptance of its plan on the slice's fact subject, so a claim an agent forged to look like
a plan does not make either exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopbus.errors import UsageError
from schemas.adoption import ADOPTED_SUBJECT, ConfigAdopted
from schemas.envelope import ROLES
from schemas.ids import is_token
from schemas.slices import SlicePlanAccepted
from schemas.subjects import PREFIX, unit_subject
from schemas.units import TERMINAL_STATES

if TYPE_CHECKING:  # the bus (nats-py) is imported when a check runs: --help needs none
    from collections.abc import AsyncIterator

    from bus import Bus, Record


def read(bus: Bus, *, subjects: list[str]) -> AsyncIterator[Record]:
    """The log's records on ``subjects`` (``bus.read``, imported only when a check runs)."""
    from bus import read as read_log

    return read_log(bus, subjects=subjects)


STATUS_HINT = "loopbus status --project {project} shows its units"


async def require_unit(
    bus: Bus, project: str, unit: str, *, option: str = "--unit", ended: str | None = None
) -> None:
    """Raise the one-line :class:`UsageError` when no accepted plan of ``project`` has
    ``unit``; with ``ended`` (what the claim would do, e.g. "to start"), also when the
    unit has ended (done, failed, lost), since every daemon would refuse the claim then."""
    from projections import units as units_fold  # the folds: only a claim naming a unit pays

    facts = [r.event async for r in read(bus, subjects=[unit_subject(project, unit)])]
    view = units_fold.FOLD.fold(e for e in facts if e is not None).units.get(unit)
    if view is None:
        raise UsageError(
            f"{option} {unit!r}: no accepted plan of project {project!r} has that unit "
            f"({STATUS_HINT.format(project=project)})"
        )
    if ended is not None and view.state in TERMINAL_STATES:
        raise UsageError(
            f"{option} {unit!r} is {view.state} already: there is nothing {ended} "
            f"({STATUS_HINT.format(project=project)})"
        )


async def require_slice(bus: Bus, project: str, slice_id: str) -> None:
    """Raise the one-line :class:`UsageError` when the system never accepted a plan of
    ``slice_id`` in ``project``."""
    from loopbus.answers import system_fact

    async for record in read(bus, subjects=[f"{PREFIX}.{project}.slice.{slice_id}"]):
        event = record.event
        if isinstance(event, SlicePlanAccepted) and system_fact(event, record.subject):
            return
    raise UsageError(
        f"--slice {slice_id!r}: project {project!r} has no accepted plan of that slice "
        "(loopbus status --project shows its slices)"
    )


OWNER_ROLES = tuple(role for role in ROLES if role != "system")
"""Who a person may make a finding's owner: a role that acts (the system acts on its own
findings and needs no routing), or ``builder:<unit>``, the builder of one unit."""


async def require_owner(bus: Bus, project: str, owner: str) -> None:
    """Raise the one-line :class:`UsageError` unless ``owner`` is a role of
    :data:`OWNER_ROLES` or ``builder:<unit>`` for a unit of ``project``."""
    role, sep, unit = owner.partition(":")
    if role in OWNER_ROLES and not sep:
        return
    if role == "builder" and sep and is_token(unit):
        await require_unit(bus, project, unit, option=f"--owner builder:{unit} names unit")
        return
    raise UsageError(
        f"--owner {owner!r} is not an owner: give one of {', '.join(OWNER_ROLES)}, or "
        "builder:UNIT for the builder of one unit (or leave it out: routed by class)"
    )


async def require_gate(bus: Bus, project: str, scope: str, gate: str) -> None:
    """Raise the one-line :class:`UsageError` when ``gate`` is no gate of ``project`` a move
    other than ``draft`` could apply to: nothing on the log names it (no move, no draft
    claimed, no investigation's proposal), the adopted ``loopbus.toml`` has no check of that
    id (a local gate) and no shipped profile has that name (a profile gate). The ratchet
    daemon would refuse such a claim as "no edge from no state" only after it was published.
    A claimed draft still pending counts: the daemon settles a gate's claims in order."""
    named = [
        f"{PREFIX}.{project}.ratchet.{gate}",
        f"{PREFIX}.{project}.ratchet.proposed.{gate}",
        f"{PREFIX}.{project}.claim.*.*.gate.move.{gate}",
    ]
    async for _ in read(bus, subjects=named):
        return
    if scope == "profile":
        from workers.gates.profiles import load_profiles

        if gate in load_profiles():
            return
    else:
        async for record in read(bus, subjects=[f"{PREFIX}.{project}.{ADOPTED_SUBJECT}"]):
            if isinstance(record.event, ConfigAdopted) and gate in _local_checks(record.event):
                return
    where = "a shipped profile" if scope == "profile" else "a check of its adopted loopbus.toml"
    raise UsageError(
        f"--gate {gate!r}: project {project!r} has no {scope} gate of that id (no move of it "
        f"on the log, and it is not {where}); check the id, or start the gate with --move draft"
    )


def _local_checks(adopted: ConfigAdopted) -> set[str]:
    """The ids of the project's own checks in an adopted configuration (what the ratchet
    daemon takes as Local gates); none when its text does not parse."""
    from workers.errors import ConfigError
    from workers.gates.config import parse_config

    try:
        config = parse_config(adopted.text)
    except (ConfigError, ValueError):
        return set()
    return {spec.id for spec in config.checks if spec.origin == "project"}
