"""``loopbus report …``: claims. Agents and operators speak only through reports.

``report finding`` raises a finding as a reviewer, builder, standards role or operator. The
producers that are system daemons (``schemas.authority.SYSTEM_PRODUCERS``) are refused here:
their findings are facts, and only the daemon that established them publishes them.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os

from loopbus.claiming import publish_claim
from loopbus.commands.report_args import add_claimant as add_claimant
from loopbus.errors import UsageError
from loopbus.known import require_known_unless_new
from loopbus.known_work import require_owner, require_slice, require_unit
from loopbus.settings import connection, credential
from schemas import (
    FINDING_CLASSES,
    PRODUCERS,
    SEVERITIES,
    Actor,
    FindingRaised,
    InvalidValue,
    parse_target,
)
from schemas.authority import PRODUCER_ROLES, SYSTEM_PRODUCERS
from schemas.ids import is_token
from schemas.targets import MAX_LINE, CodeTarget, Target, inside_repository


def principal(args: argparse.Namespace) -> str:
    """Who claims: the credential's principal, which is the only one it may claim as.

    Naming another is refused here, before anything is sent (the server would refuse the
    publish: the principal is a token of the claim's subject, and a credential may publish
    only under its own)."""
    creds = credential(args)
    named = args.principal or os.environ.get("LOOPBUS_PRINCIPAL")
    if creds is not None:
        if named and named != creds.principal and creds.role not in ("admin", "system"):
            raise UsageError(
                f"--principal {named!r}: the {creds.role} credential {creds.path} is for "
                f"principal {creds.principal!r}, and a credential claims only as its own "
                "principal; drop --principal (and $LOOPBUS_PRINCIPAL) or pass that "
                "principal's --creds"
            )
        return str(named or creds.principal)
    return str(named or getpass.getuser())


def choice(option: str, value: str, allowed: tuple[str, ...] | frozenset[str]) -> str:
    """``value`` when it is one of ``allowed``; a one-line usage error naming them otherwise."""
    if value not in allowed:
        raise UsageError(f"{option} {value!r} is not one of: {', '.join(sorted(allowed))}")
    return value


def token(option: str, value: str) -> str:
    if not is_token(value):
        raise UsageError(
            f"{option} {value!r} is not a valid id: use letters, digits, '_' or '-' (max 64)"
        )
    return value


def build_finding(args: argparse.Namespace) -> FindingRaised:
    producer = choice("--producer", args.producer, PRODUCERS)
    if producer in SYSTEM_PRODUCERS:
        raise UsageError(
            f"--producer {producer} is a system daemon: its findings are facts it publishes "
            f"itself; report as one of {', '.join(sorted(PRODUCER_ROLES))}"
        )
    evidence: dict[str, str] = {}
    for item in args.evidence:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--evidence {item!r} must be KEY=VALUE")
        evidence[key] = value
    message = args.message.strip()
    if not message:
        raise UsageError("--message is empty: say in a sentence what the finding is")
    return FindingRaised(
        project=token("--project", args.project),
        actor=Actor(role=PRODUCER_ROLES[producer], principal=principal(args)),
        producer=producer,  # type: ignore[arg-type]
        target=finding_target(args.target),
        severity=choice("--severity", args.severity, SEVERITIES),  # type: ignore[arg-type]
        criterion=args.criterion,
        cls=choice("--class", args.cls, FINDING_CLASSES),  # type: ignore[arg-type]
        message=message,
        evidence=evidence,
        unit=token("--unit", args.unit) if args.unit else None,
        slice=token("--slice", args.slice) if args.slice else None,
        owner=args.owner,
    )


def finding_target(text: str) -> Target:
    """The parsed ``--target``, refused in one line when a code target's path leaves the
    repository or its lines are past :data:`MAX_LINE`: what lands on the log is exported
    (SARIF) and shown as a file of the repository."""
    try:
        target = parse_target(text)
    except InvalidValue as exc:
        raise UsageError(f"--target {text!r}: {exc.hint}") from exc
    if not isinstance(target, CodeTarget):
        return target
    path = inside_repository(target.path)
    if path is None:
        raise UsageError(
            f"--target {text!r}: {target.path!r} must be a path inside the repository "
            "(relative to its root, without '..'), e.g. code:src/app.py:3-7"
        )
    if target.end > MAX_LINE:
        raise UsageError(
            f"--target {text!r}: line {target.end} is past the last line a file can have "
            f"({MAX_LINE}); give the lines of the code the finding is about"
        )
    return CodeTarget(path=path, start=target.start, end=target.end)


def run_finding(args: argparse.Namespace) -> int:
    finding = build_finding(args)

    async def publish() -> int:
        bus = await connection(args).open()
        try:
            await require_known_unless_new(bus, args)
            # What the finding names must exist: a typo would stay on the permanent log
            # and route the finding to work nobody has.
            if finding.unit is not None:
                await require_unit(bus, finding.project, finding.unit)
            if finding.slice is not None:
                await require_slice(bus, finding.project, finding.slice)
            if finding.owner is not None:
                await require_owner(bus, finding.project, finding.owner)
            ack = await publish_claim(bus, finding)
        finally:
            await bus.close()
        print(f"finding {finding.id} published at seq {ack.seq}")
        return 0

    return asyncio.run(publish())
