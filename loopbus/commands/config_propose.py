"""``loopbus config propose``: an operator proposes a new ``loopbus.toml`` for trunk.

What no unit and no contract may change — the ``[build]``, ``[review]`` or ``[plan]``
commands, or a check the ratchet proposed (``gate.proposed``) installed — changes by a
proposal an operator then approves (``loopbus approve --config ID``). This publishes the
proposal (``config.proposal.v1``: the whole file and why) on the operator's own claim
subject; nothing changes until it is approved, and the merger refuses one from any other
role with a finding. The file is checked here first (one line, exit 2, when it is not a
valid ``loopbus.toml``).
"""

from __future__ import annotations

import argparse
import asyncio

from loopbus.claiming import publish_claim
from loopbus.commands.report import principal, token
from loopbus.errors import UsageError
from loopbus.known import require_known
from loopbus.settings import connection
from schemas import Actor
from schemas.contract import ConfigProposal
from schemas.limits import MAX_TEXT_CHARS
from schemas.subjects import subject_of
from workers.errors import ConfigError
from workers.gates.config import parse_config


def build(args: argparse.Namespace) -> ConfigProposal:
    why = (args.why or "").strip()
    if not why:
        raise UsageError("--why is empty: a proposal says why the configuration should change")
    try:
        text = args.file.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--file {str(args.file)!r}: cannot read it ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        # loopbus.toml is UTF-8 (TOML requires it); say so in one line, not a traceback
        raise UsageError(
            f"--file {str(args.file)!r} is not UTF-8 (byte {exc.start}); save it as UTF-8"
        ) from exc
    if len(text) > MAX_TEXT_CHARS:
        raise UsageError(
            f"--file {str(args.file)!r} is {len(text)} characters; a configuration carried on "
            f"the log may be at most {MAX_TEXT_CHARS}"
        )
    try:
        parse_config(text, source=str(args.file))
    except ConfigError as exc:
        raise UsageError(f"--file: {' '.join(str(exc).split())}") from exc
    return ConfigProposal(
        project=token("--project", args.project),
        actor=Actor(role="operator", principal=principal(args)),
        text=text,
        why=why,
    )


def run(args: argparse.Namespace) -> int:
    claim = build(args)

    async def publish() -> int:
        bus = await connection(args).open()
        try:
            bus.check_publish(subject_of(claim))  # a credential that may not propose: say so
            await require_known(bus, claim.project)
            ack = await publish_claim(bus, claim)
        finally:
            await bus.close()
        print(
            f"configuration proposal {claim.id} of {claim.project} published at seq {ack.seq}; "
            f"approve it with: loopbus approve --project {claim.project} --config {claim.id} "
            "--why '...'"
        )
        return 0

    return asyncio.run(publish())
