"""Command line of the projector daemon."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from workers.cli import Body, daemon_parser, main_for, make_kernel
from workers.projector.daemon import GAP_S, INTERVAL_S, ProjectorDaemon
from workers.runtime import DaemonContext


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("projector", "Fold the log into materialised projections.")
    parser.add_argument(
        "--interval",
        type=float,
        default=INTERVAL_S,
        help="while behind the log, write what is folded at least every S seconds "
        "(default %(default)s; once caught up it is written at once)",
    )
    parser.add_argument(
        "--gap",
        type=float,
        default=GAP_S,
        help="start writes at least S seconds apart (default %(default)s)",
    )

    def make_body(args: argparse.Namespace) -> Body:
        async def body(ctx: DaemonContext) -> None:
            daemon = ProjectorDaemon(ctx.bus, interval=args.interval, gap=args.gap)
            await make_kernel(ctx, daemon).run(ctx.stop)

        return body

    return main_for(ProjectorDaemon.name, parser, make_body, argv)
