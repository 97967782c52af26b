"""``loopbus config adopt``: an operator adopts the ``loopbus.toml`` that judges trunk.

Trunk, merge candidates and outside pushes are judged with the adopted configuration,
never with the file of the commit being judged (docs/merger.md). ``loopbus up`` adopts
trunk's file when it first starts on a project; after that the configuration changes only
by this command (or by a unit's allowed edit landing through the merger). It publishes an
operator's claim (``config.adopt.v1``); the merger reads the file of ``--commit`` (default:
trunk as it is then) and records ``config.adopted.v1``, or refuses the claim with a finding.
Only an operator credential may publish it: an agent's is refused here, before anything is
sent, and by the server.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from loopbus.commands.report import add_claimant, principal, token
from loopbus.errors import UsageError
from loopbus.known import require_known
from loopbus.schemas import Actor
from loopbus.schemas.adoption import ConfigAdopt
from loopbus.schemas.subjects import subject_of
from loopbus.settings import add_connection, add_project, connection


def register(sub: Any) -> None:
    parser = sub.add_parser("config", help="the configuration that judges trunk (operators)")
    verbs = parser.add_subparsers(dest="config_verb", metavar="VERB")
    verbs.required = True
    text = "adopt a commit's loopbus.toml as the configuration that judges trunk (operators)"
    adopt = verbs.add_parser("adopt", help=text, description=text)
    add_connection(adopt, role="operator")
    add_claimant(adopt)
    add_project(adopt)
    adopt.add_argument(
        "--commit",
        default="",
        help="the commit whose loopbus.toml to adopt: a sha, short sha or branch of the "
        "merger's repository (default: trunk as it is when the merger answers)",
    )
    adopt.add_argument("--why", required=True, help="why (kept on the log with the adoption)")
    adopt.set_defaults(handler=run)


def build(args: argparse.Namespace) -> ConfigAdopt:
    why = (args.why or "").strip()
    if not why:
        raise UsageError("--why is empty: an adoption says why this configuration judges trunk")
    commit = (args.commit or "").strip()
    if commit and (len(commit) > 255 or any(c.isspace() for c in commit)):
        raise UsageError(f"--commit {commit[:40]!r} is not a commit: give a sha or a branch")
    return ConfigAdopt(
        project=token("--project", args.project),
        actor=Actor(role="operator", principal=principal(args)),
        commit=commit,
        why=why,
    )


def run(args: argparse.Namespace) -> int:
    claim = build(args)

    async def publish() -> int:
        bus = await connection(args).open()
        try:
            bus.check_publish(subject_of(claim))  # a credential that may not adopt: say that
            await require_known(bus, claim.project)
            ack = await bus.publish(claim)
        finally:
            await bus.close()
        what = claim.commit or "trunk"
        print(
            f"adoption {claim.id} of {claim.project}'s loopbus.toml at {what} published at seq "
            f"{ack.seq}; the merger records it (loopbus tail --kind config) or refuses it"
        )
        return 0

    return asyncio.run(publish())
