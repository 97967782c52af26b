"""``loopbus config adopt``: an operator adopts the ``loopbus.toml`` that judges trunk.

Trunk, merge candidates and outside pushes are judged with the adopted configuration,
never with the file of the commit being judged (docs/merger.md). ``loopbus up`` adopts
trunk's file when it first starts on a project; after that the configuration changes only
by this command (or by a unit's allowed edit landing through the merger). It publishes an
operator's claim (``config.adopt.v1``) naming ``--commit`` by its full sha (default: trunk as the
merger last gated it, read from the log and printed, so what is adopted is pinned before
anything can be pushed); the merger reads that commit's file and records
``config.adopted.v1``, or refuses the claim with a finding.
Only an operator credential may publish it: an agent's is refused here, before anything is
sent, and by the server.
"""

from __future__ import annotations

import argparse
import asyncio

import msgspec

from bus import Bus, read
from loopbus.claiming import publish_claim
from loopbus.commands.report import principal, token
from loopbus.errors import UsageError
from loopbus.known import require_known
from loopbus.settings import connection
from projections import merges as merges_fold
from schemas import Actor
from schemas.adoption import FULL_SHA, ConfigAdopt
from schemas.subjects import subject_of, trunk_subjects


def build(args: argparse.Namespace) -> ConfigAdopt:
    why = (args.why or "").strip()
    if not why:
        raise UsageError("--why is empty: an adoption says why this configuration judges trunk")
    commit = (args.commit or "").strip().lower()
    if commit and not FULL_SHA.match(commit):
        raise UsageError(
            f"--commit {commit[:80]!r} is not a full commit sha; name the commit whose file "
            "you reviewed in full (git rev-parse), so nothing pushed meanwhile is adopted"
        )
    return ConfigAdopt(
        project=token("--project", args.project),
        actor=Actor(role="operator", principal=principal(args)),
        commit=commit,
        why=why,
    )


async def trunk_commit(bus: Bus, claim: ConfigAdopt) -> str:
    """Trunk as the merger last gated it, from the log (folded as the merger folds it, so
    a forged trunk fact does not count): the commit a claim without ``--commit`` pins."""
    facts = [r.event async for r in read(bus, subjects=trunk_subjects(claim.project))]
    trunk = merges_fold.FOLD.fold(e for e in facts if e is not None).trunk
    if trunk.commit is None:
        raise UsageError(
            f"--commit: the merger has not gated {claim.project}'s trunk yet; name the "
            "commit whose loopbus.toml to adopt by its full sha"
        )
    return trunk.commit


def run(args: argparse.Namespace) -> int:
    claim = build(args)

    async def publish() -> int:
        bus = await connection(args).open()
        try:
            bus.check_publish(subject_of(claim))  # a credential that may not adopt: say that
            await require_known(bus, claim.project)
            pinned, where = claim, ""
            if not claim.commit:
                pinned = msgspec.structs.replace(claim, commit=await trunk_commit(bus, claim))
                where = " (trunk as the merger last gated it)"
            ack = await publish_claim(bus, pinned)
        finally:
            await bus.close()
        print(
            f"adoption {claim.id} of {claim.project}'s loopbus.toml at {pinned.commit}{where} "
            f"published at seq {ack.seq}; the merger records it (loopbus tail --kind config) "
            "or refuses it with a finding"
        )
        return 0

    return asyncio.run(publish())
