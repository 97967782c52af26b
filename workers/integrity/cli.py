"""Command line of the integrity daemon: ``python -m workers.integrity``."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from pathlib import Path

from workers.cli import Body, daemon_parser, kernel_body, main_for
from workers.integrity.daemon import Integrity
from workers.integrity.violations import ServerLogWatch
from workers.kernel.daemon import system_actor
from workers.runtime import DaemonContext


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("integrity", "Name every forger in a finding.")
    parser.add_argument(
        "--project",
        action="append",
        default=[],
        metavar="P",
        help="watch only this project (repeatable; default: every project)",
    )
    parser.add_argument(
        "--server-log",
        type=Path,
        default=None,
        help="nats-server's log file: each publish the server refused becomes a finding "
        "(loopbus up passes its embedded server's)",
    )
    parser.add_argument(
        "--creds-dir",
        type=Path,
        default=None,
        help="the credentials folder, to name the credential behind a refused publish",
    )

    def make_body(args: argparse.Namespace) -> Body:
        forgeries = kernel_body(lambda: Integrity(projects=args.project))
        if args.server_log is None:
            return forgeries

        async def body(ctx: DaemonContext) -> None:
            creds = args.creds_dir or args.server_log.parent / "creds"
            watch = ServerLogWatch(ctx.bus, args.server_log, creds, system_actor("integrity"))
            await asyncio.gather(forgeries(ctx), watch.run(ctx.stop))

        return body

    return main_for(Integrity.name, parser, make_body, argv)
